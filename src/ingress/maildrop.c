/*
 * NAME
 *	maildrop 3 - the maildrop directory: messages from users who may
 *	not write the spool
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	maildrop_create(const char *queue_directory, char *why,
 *			size_t whylen)
 *	int	maildrop_write(const char *dir, const struct spool_msg *m,
 *			char *name, size_t namelen, char *why, size_t whylen)
 *	int	maildrop_read(int dirfd, const char *name,
 *			struct spool_msg **m, uid_t *owner, char *why,
 *			size_t whylen)
 *	int	maildrop_format(const struct spool_msg *m, char **out,
 *			size_t *len, char *why, size_t whylen)
 *	int	maildrop_parse(char *buf, size_t len, uid_t owner,
 *			struct spool_msg **m, char *why, size_t whylen)
 *	int	maildrop_import(const char *queue_directory,
 *			maildrop_store_fn *store, void *ctx,
 *			struct maildrop_stats *st, char *why, size_t whylen)
 * DESCRIPTION
 *	<queue_directory>/maildrop has mode 1733: anyone may create a file
 *	in it, nobody but its owner (the spool owner) may list it or read
 *	the files, and the sticky bit keeps users from removing each
 *	other's files. "sluice sendmail" run by a user who may not write
 *	the spool database writes the message there; the daemon imports
 *	it into the spool.
 *
 *	maildrop_create() makes maildrop (mode 1733) and maildrop-bad
 *	(mode 0700) under queue_directory when they are missing; existing
 *	directories are left as they are (an administrator may prefer a
 *	group-writable 1730 maildrop), but must be directories.
 *
 *	maildrop_write() writes message m (sender, envid, ret, arrival
 *	time, recipients with their original address, ORCPT and NOTIFY,
 *	and the body: m->size bytes at m->body, the whole message as it
 *	will be stored) into a new file in dir and puts its name in name
 *	(at least MAILDROP_NAME_LEN + 1 bytes). The name is 16 hex digits
 *	from getrandom(2). The file is created as ".NAME" with O_EXCL and
 *	mode 0444 (see below), written, fsynced, and renamed to NAME without
 *	replacing a file of that name (renameat2 RENAME_NOREPLACE, or a
 *	check before rename() on file systems without it; 64 random bits
 *	make a clash a formality either way). An importer ignores names
 *	that start with ".", so it never sees a partial file. The rename
 *	is made durable with an fsync of the directory when the writer may
 *	open it (its owner, root); other users may not read a 1733
 *	directory, so the file is fsynced again after the rename, which
 *	on ext4, XFS and btrfs commits the rename with the inode's change
 *	(POSIX promises nothing here; see doc/ if this matters to you).
 *	The file records geteuid() as the submitting uid. m->arrival of 0
 *	means now.
 *
 *	Why 0444 and not 0600: the file belongs to the submitting user,
 *	and the importer runs as the spool owner, not as root, so it could
 *	not read a 0600 file. Other users cannot list the directory, so
 *	they cannot learn the 64-bit random names of the files to read
 *	them (Postfix's postdrop makes its maildrop files 0444 for the same
 *	reason). The mode is set with fchmod(), past the writer's umask.
 *
 *	maildrop_read() reads file name in the directory open as dirfd and
 *	returns a new message (spool_msg_new(), free it with
 *	spool_msg_free()): sender, envid, ret, arrival, recipients, and
 *	the body in m->body (m->size bytes, NUL-terminated beyond them),
 *	and in *owner the uid that owns the file. The file must be a
 *	regular file with one link (not a symbolic link, not a hard link
 *	to someone else's file) of at most MAILDROP_SIZE_MAX bytes (its
 *	owner could make it grow while we read it), and the uid it records
 *	must be its owner; a file that the importer may not read (its
 *	owner changed its mode) counts as malformed too.
 *	On error it returns -1 with errno set: EBADMSG when the file is
 *	malformed, with the reason (without the file name) in why; ENOENT
 *	when it vanished; EINVAL for a name that starts with "." or holds
 *	"/"; another errno when it cannot be read.
 *
 *	maildrop_format() and maildrop_parse() are the same record in
 *	memory, for the daemon's submission socket (local.c), which speaks
 *	the file format so that both ways in are read by one strict
 *	parser. maildrop_format() returns in *out a new buffer (free() it)
 *	of *len bytes holding exactly what maildrop_write() would write.
 *	maildrop_parse() reads one from buf (len bytes, malloc'd; it is
 *	taken over, and becomes the body or is freed) whose uid must be
 *	owner; it fails as maildrop_read() does, with EBADMSG.
 *
 *	maildrop_import() imports every complete file of
 *	<queue_directory>/maildrop, oldest first: it reads it, hands it to
 *	store(ctx, m, owner, why, whylen), and removes the file only after
 *	store returned 0 (the message is durable in the spool). A
 *	malformed file is moved to maildrop-bad/NAME (NAME.1, NAME.2...
 *	when the name is taken) with its reason in NAME.reason beside it;
 *	it is never removed and never stops the import. A store failure
 *	is temporary: the import stops there, the file stays. A file that
 *	cannot be read or moved aside stays too, and the import goes on.
 *	Temporary files (".NAME") are left alone; those older than
 *	MAILDROP_STALE_AGE are counted in st->stale (their writer may have
 *	died: an administrator should look). It returns 0 when every file
 *	was imported or moved aside, else -1 with the first problem in why
 *	("NAME: REASON"); st counts what happened either way.
 *
 * FILE FORMAT
 *	A maildrop file is text lines ending in LF, then the body, then a
 *	last line. In this order:
 *
 *	    sluice-maildrop 1		magic and format version
 *	    uid UID			submitting uid (decimal)
 *	    arrival USEC		microseconds since the epoch
 *	    sender VALUE		empty VALUE: the null sender
 *	    envid VALUE			optional: DSN ENVID
 *	    ret full|hdrs		optional: DSN RET
 *	    rcpts N			number of recipients, at least 1
 *	    rcpt VALUE			N times this group of lines:
 *	    orig VALUE			  optional: original recipient
 *	    orcpt VALUE			  optional: DSN ORCPT
 *	    notify WORDS		  optional: "never", or some of
 *					  success,failure,delay in this order
 *	    body LENGTH			body length in bytes
 *	    BODY			exactly LENGTH bytes, any bytes
 *	    end				and nothing after it
 *
 *	Keys and values are separated by one space. A VALUE holds the
 *	bytes 0x21-0x7e other than "%" as themselves and every other byte
 *	as %XX (two upper-case hex digits); %00 is not allowed. Numbers
 *	are decimal without sign or leading zeros. Anything else (an
 *	unknown or misplaced key, a bad value, fewer or more recipients
 *	than announced, a body shorter or longer than its length, bytes
 *	after "end") makes the file malformed: the reader parses strictly
 *	so that a damaged file is set aside rather than half delivered.
 *	A later version changes the number on the first line.
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAGIC        "sluice-maildrop"
#define VERSION      "1"
#define END_LINE     "end\n"
#define QUOTE_MAX    40 /* bytes of a bad line quoted in a reason */
#define NAME_TRIES   8  /* random names tried before giving up */
#define BAD_SUFFIXES 100

/*
 * Maildrop files are readable by all, as Postfix's are: the importer
 * (the spool owner) is not their owner, and the directory cannot be
 * listed, so only the writer and the importer know a file's name.
 */
#define MAILDROP_FILE_MODE 0444

/* renameat2() flag of <linux/fs.h>, not declared without _GNU_SOURCE. */
#define MAILDROP_RENAME_NOREPLACE 1u

/* ------------------------------------------------------------- create */

static int mkdir_mode(const char *path, mode_t mode, char *why, size_t whylen)
{
    struct stat st;

    if (mkdir(path, mode) == 0) {
        if (chmod(path, mode) == 0) /* past the umask */
            return 0;
    } else if (errno == EEXIST && stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
    }
    snprintf(why, whylen, "%s: %s", path, strerror(errno));
    return -1;
}

static void path_join(char *buf, size_t len, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
        ingress_panic("path too long: %s/%s", dir, name);
}

int maildrop_create(const char *queue_directory, char *why, size_t whylen)
{
    char path[PATH_MAX];

    path_join(path, sizeof(path), queue_directory, MAILDROP_DIR);
    if (mkdir_mode(path, 01733, why, whylen) < 0)
        return -1;
    path_join(path, sizeof(path), queue_directory, MAILDROP_BAD_DIR);
    return mkdir_mode(path, 0700, why, whylen);
}

/* -------------------------------------------------------------- write */

static void put_value(struct ingress_buf *b, const char *key, const char *v)
{
    unsigned char ch;

    ingress_buf_addf(b, "%s ", key);
    for (; *v != 0; v++) {
        ch = (unsigned char)*v;
        if (ch > ' ' && ch < 0x7f && ch != '%')
            ingress_buf_add(b, v, 1);
        else
            ingress_buf_addf(b, "%%%02X", ch);
    }
    ingress_buf_add(b, "\n", 1);
}

static int64_t now_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Everything before the body. Returns -1 (why set) for a bad message. */
static int format_envelope(const struct spool_msg *m, struct ingress_buf *b,
                           char *why, size_t whylen)
{
    char words[64];
    uint32_t i;

    if (m->sender == NULL) {
        snprintf(why, whylen, "message has no sender");
        return -1;
    }
    if (m->nrcpt == 0) {
        snprintf(why, whylen, "message has no recipients");
        return -1;
    }
    if (m->body == NULL && m->size > 0) {
        snprintf(why, whylen, "message has no body");
        return -1;
    }
    ingress_buf_addf(b, "%s %s\nuid %lu\narrival %" PRId64 "\n", MAGIC, VERSION,
                     (unsigned long)geteuid(),
                     m->arrival > 0 ? m->arrival : now_usec());
    put_value(b, "sender", m->sender);
    if (m->envid != NULL)
        put_value(b, "envid", m->envid);
    if (m->ret == SPOOL_RET_FULL || m->ret == SPOOL_RET_HDRS)
        ingress_buf_addf(b, "ret %s\n",
                         m->ret == SPOOL_RET_FULL ? "full" : "hdrs");
    ingress_buf_addf(b, "rcpts %" PRIu32 "\n", m->nrcpt);
    for (i = 0; i < m->nrcpt; i++) {
        if (m->rcpt[i].address == NULL || *m->rcpt[i].address == 0) {
            snprintf(why, whylen, "recipient %" PRIu32 " has no address",
                     i + 1);
            return -1;
        }
        put_value(b, "rcpt", m->rcpt[i].address);
        if (m->rcpt[i].orig != NULL)
            put_value(b, "orig", m->rcpt[i].orig);
        if (m->rcpt[i].orcpt != NULL)
            put_value(b, "orcpt", m->rcpt[i].orcpt);
        if (m->rcpt[i].notify != 0) {
            ingress_notify_format(m->rcpt[i].notify, words, sizeof(words));
            ingress_buf_addf(b, "notify %s\n", words);
        }
    }
    ingress_buf_addf(b, "body %" PRIu64 "\n", m->size);
    return 0;
}

static int write_all(int fd, const char *data, size_t len)
{
    ssize_t n;

    while (len > 0) {
        if ((n = write(fd, data, len)) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int random_name(char *name, char *why, size_t whylen)
{
    unsigned char bytes[MAILDROP_NAME_LEN / 2];
    size_t got = 0;
    ssize_t n;
    size_t i;

    while (got < sizeof(bytes)) {
        if ((n = getrandom(bytes + got, sizeof(bytes) - got, 0)) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, whylen, "getrandom: %s", strerror(errno));
            return -1;
        }
        got += (size_t)n;
    }
    for (i = 0; i < sizeof(bytes); i++)
        sprintf(name + 2 * i, "%02x", bytes[i]);
    return 0;
}

/* rename() that never replaces an existing file. */
static int rename_noreplace(const char *from, const char *to)
{
    struct stat st;

#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to,
                MAILDROP_RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    if (lstat(to, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    if (errno != ENOENT)
        return -1;
    return rename(from, to);
}

/*
 * Make the rename durable: fsync the directory if we may open it, else
 * fsync the file again (see DESCRIPTION).
 */
static int sync_rename(const char *dir, int fd)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int status;
    int saved;

    if (dfd < 0)
        return errno == EACCES ? fsync(fd) : -1;
    status = fsync(dfd);
    saved = errno;
    close(dfd);
    errno = saved;
    return status;
}

/* Write the file, rename it into place; fd is open on dir/.NAME. */
static int write_file(const char *dir, int fd, const char *tmp,
                      const struct ingress_buf *env, const struct spool_msg *m,
                      char *name, size_t namelen, char *why, size_t whylen)
{
    char final[PATH_MAX];
    int tries;

    if (write_all(fd, env->s, env->len) < 0 ||
        write_all(fd, m->body, m->size) < 0 ||
        write_all(fd, END_LINE, strlen(END_LINE)) < 0 || fsync(fd) < 0) {
        snprintf(why, whylen, "write %s: %s", tmp, strerror(errno));
        return -1;
    }
    /* The final name is the temporary one without the dot, if free. */
    snprintf(name, namelen, "%s", strrchr(tmp, '/') + 2);
    for (tries = 0;; tries++) {
        path_join(final, sizeof(final), dir, name);
        if (rename_noreplace(tmp, final) == 0)
            break;
        if (errno != EEXIST || tries == NAME_TRIES ||
            random_name(name, why, whylen) < 0) {
            snprintf(why, whylen, "rename %s to %s: %s", tmp, final,
                     strerror(errno));
            return -1;
        }
    }
    if (sync_rename(dir, fd) < 0) {
        snprintf(why, whylen, "fsync %s: %s", final, strerror(errno));
        unlink(final);
        return -1;
    }
    return 0;
}

int maildrop_write(const char *dir, const struct spool_msg *m, char *name,
                   size_t namelen, char *why, size_t whylen)
{
    struct ingress_buf env = {NULL, 0, 0};
    char base[MAILDROP_NAME_LEN + 2];
    char tmp[PATH_MAX];
    int status = -1;
    int tries;
    int fd = -1;

    if (namelen < MAILDROP_NAME_LEN + 1)
        ingress_panic("maildrop_write: name buffer of %zu bytes", namelen);
    if (format_envelope(m, &env, why, whylen) < 0)
        goto done;
    base[0] = '.';
    for (tries = 0; fd < 0; tries++) {
        if (random_name(base + 1, why, whylen) < 0)
            goto done;
        path_join(tmp, sizeof(tmp), dir, base);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  MAILDROP_FILE_MODE);
        if (fd < 0 && (errno != EEXIST || tries == NAME_TRIES)) {
            snprintf(why, whylen, "create %s: %s", tmp, strerror(errno));
            goto done;
        }
    }
    /* Past the umask: the importer is not the writer. */
    if (fchmod(fd, MAILDROP_FILE_MODE) < 0)
        snprintf(why, whylen, "chmod %s: %s", tmp, strerror(errno));
    else
        status = write_file(dir, fd, tmp, &env, m, name, namelen, why, whylen);
    if (close(fd) < 0 && status == 0) {
        snprintf(why, whylen, "close %s: %s", tmp, strerror(errno));
        status = -1;
    }
    if (status < 0)
        unlink(tmp); /* gone already if the rename was done */

done:
    free(env.s);
    return status;
}

int maildrop_format(const struct spool_msg *m, char **out, size_t *len,
                    char *why, size_t whylen)
{
    struct ingress_buf b = {NULL, 0, 0};

    *out = NULL;
    *len = 0;
    if (format_envelope(m, &b, why, whylen) < 0) {
        free(b.s);
        return -1;
    }
    ingress_buf_add(&b, m->body, m->size);
    ingress_buf_add(&b, END_LINE, strlen(END_LINE));
    *out = b.s;
    *len = b.len;
    return 0;
}

/* --------------------------------------------------------------- read */

struct reader {
    char *buf;
    size_t len;
    size_t pos;      /* start of the next line */
    int line;        /* number of the next line */
    const char *key; /* the line just read: key, value */
    size_t klen;
    const char *val; /* NULL: no space in the line */
    size_t vlen;
    char *why;
    size_t whylen;
};

/* Quote text for a reason, as conf does: "...", \xHH, cut with "...". */
static void quote(char *out, size_t outlen, const char *s, size_t n)
{
    size_t used = 0;
    size_t i;
    unsigned char ch;

    used += (size_t)snprintf(out, outlen, "\"");
    for (i = 0; i < n && i < QUOTE_MAX && used + 8 < outlen; i++) {
        ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            used += (size_t)snprintf(out + used, outlen - used, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            used += (size_t)snprintf(out + used, outlen - used, "\\x%02x", ch);
        else
            out[used++] = (char)ch;
    }
    snprintf(out + used, outlen - used, "%s\"", i < n ? "..." : "");
}

static int bad(struct reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int bad(struct reader *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->why, r->whylen, fmt, ap);
    va_end(ap);
    errno = EBADMSG;
    return -1;
}

/* Read the next line into r->key, r->val. */
static int next_line(struct reader *r)
{
    const char *s = r->buf + r->pos;
    const char *nl = memchr(s, '\n', r->len - r->pos);
    const char *sp;

    if (nl == NULL)
        return bad(r, "truncated at line %d", r->line);
    r->key = s;
    sp = memchr(s, ' ', (size_t)(nl - s));
    r->klen = (size_t)((sp ? sp : nl) - s);
    r->val = sp ? sp + 1 : NULL;
    r->vlen = sp ? (size_t)(nl - sp - 1) : 0;
    r->pos = (size_t)(nl - r->buf) + 1;
    r->line++;
    return 0;
}

static int key_is(const struct reader *r, const char *key)
{
    return r->klen == strlen(key) && memcmp(r->key, key, r->klen) == 0;
}

/* Read a line that must have this key and a value. */
static int expect(struct reader *r, const char *key)
{
    char found[4 * QUOTE_MAX + 8];

    if (next_line(r) < 0)
        return -1;
    if (key_is(r, key) && r->val != NULL)
        return 0;
    quote(found, sizeof(found), r->key, r->klen);
    if (key_is(r, key))
        return bad(r, "line %d: \"%s\" without a value", r->line - 1, key);
    return bad(r, "line %d: expected \"%s\", found %s", r->line - 1, key,
               found);
}

/* Is the next line's key this one? (Does not consume it.) */
static int peek(const struct reader *r, const char *key)
{
    size_t n = strlen(key);

    return r->len - r->pos > n && memcmp(r->buf + r->pos, key, n) == 0 &&
           r->buf[r->pos + n] == ' ';
}

static int bad_value(struct reader *r, const char *key)
{
    char q[4 * QUOTE_MAX + 8];

    quote(q, sizeof(q), r->val, r->vlen);
    return bad(r, "line %d: bad %s %s", r->line - 1, key, q);
}

/* The current line's value as a number up to max. */
static int number(struct reader *r, const char *key, uint64_t max,
                  uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (r->vlen == 0 || (r->val[0] == '0' && r->vlen > 1))
        return bad_value(r, key);
    for (i = 0; i < r->vlen; i++) {
        if (r->val[i] < '0' || r->val[i] > '9' ||
            v > (max - (uint64_t)(r->val[i] - '0')) / 10)
            return bad_value(r, key);
        v = 10 * v + (uint64_t)(r->val[i] - '0');
    }
    *out = v;
    return 0;
}

static int hex(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* The current line's value, decoded into a new string. */
static int value(struct reader *r, const char *key, int may_be_empty,
                 char **out)
{
    char *s = xmalloc(r->vlen + 1);
    size_t n = 0;
    size_t i;
    int hi;
    int lo;

    for (i = 0; i < r->vlen; i++) {
        unsigned char ch = (unsigned char)r->val[i];

        if (ch == '%' && r->vlen - i >= 3 && (hi = hex(r->val[i + 1])) >= 0 &&
            (lo = hex(r->val[i + 2])) >= 0 && (hi | lo) != 0) {
            s[n++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (ch > ' ' && ch < 0x7f && ch != '%') {
            s[n++] = (char)ch;
        } else {
            free(s);
            return bad_value(r, key);
        }
    }
    s[n] = 0;
    if (n == 0 && !may_be_empty) {
        free(s);
        return bad_value(r, key);
    }
    *out = s;
    return 0;
}

/* An optional "key VALUE" line into *out. */
static int optional_value(struct reader *r, const char *key, char **out)
{
    if (!peek(r, key))
        return 0;
    if (expect(r, key) < 0)
        return -1;
    return value(r, key, 0, out);
}

static int read_magic(struct reader *r)
{
    size_t mlen = strlen(MAGIC);
    char q[4 * QUOTE_MAX + 8];
    const char *nl;

    if (r->len == 0)
        return bad(r, "empty file");
    nl = memchr(r->buf, '\n', r->len);
    if (r->len <= mlen || memcmp(r->buf, MAGIC " ", mlen + 1) != 0) {
        quote(q, sizeof(q), r->buf, nl ? (size_t)(nl - r->buf) : r->len);
        return bad(r, "bad magic %s: not a sluice maildrop file", q);
    }
    if (next_line(r) < 0)
        return -1;
    if (r->vlen != strlen(VERSION) || memcmp(r->val, VERSION, r->vlen) != 0) {
        quote(q, sizeof(q), r->val, r->vlen);
        return bad(r, "unsupported version %s", q);
    }
    return 0;
}

static int read_ret(struct reader *r, struct spool_msg *m)
{
    if (!peek(r, "ret"))
        return 0;
    if (expect(r, "ret") < 0)
        return -1;
    if (r->vlen == 4 && memcmp(r->val, "full", 4) == 0)
        m->ret = SPOOL_RET_FULL;
    else if (r->vlen == 4 && memcmp(r->val, "hdrs", 4) == 0)
        m->ret = SPOOL_RET_HDRS;
    else
        return bad_value(r, "ret");
    return 0;
}

/* The canonical NOTIFY words, and nothing else. */
static int read_notify(struct reader *r, unsigned *bits)
{
    char words[64];
    char canon[64];

    *bits = 0;
    if (!peek(r, "notify"))
        return 0;
    if (expect(r, "notify") < 0)
        return -1;
    if (r->vlen >= sizeof(words))
        return bad_value(r, "notify");
    memcpy(words, r->val, r->vlen);
    words[r->vlen] = 0;
    if (submit_parse_notify(words, bits) < 0)
        return bad_value(r, "notify");
    ingress_notify_format(*bits, canon, sizeof(canon));
    if (strcmp(canon, words) != 0)
        return bad_value(r, "notify");
    return 0;
}

static int read_rcpt(struct reader *r, struct spool_msg *m, uint64_t i,
                     uint64_t n)
{
    char *addr = NULL;
    char *orig = NULL;
    char *orcpt = NULL;
    unsigned notify = 0;
    int status = -1;

    char q[4 * QUOTE_MAX + 8];

    if (next_line(r) < 0)
        return -1;
    if (!key_is(r, "rcpt") || r->val == NULL) {
        quote(q, sizeof(q), r->key, r->klen);
        return bad(r,
                   "line %d: expected \"rcpt\" (recipient %" PRIu64
                   " of %" PRIu64 "), found %s",
                   r->line - 1, i + 1, n, q);
    }
    if (value(r, "rcpt", 0, &addr) == 0 &&
        optional_value(r, "orig", &orig) == 0 &&
        optional_value(r, "orcpt", &orcpt) == 0 &&
        read_notify(r, &notify) == 0) {
        if (spool_msg_add_rcpt(m, addr, orig, notify, orcpt) < 0)
            ingress_panic("spool_msg_add_rcpt failed");
        status = 0;
    }
    free(addr);
    free(orig);
    free(orcpt);
    return status;
}

/* Everything up to the "body" line; leaves *body_len. */
static int read_envelope(struct reader *r, struct spool_msg *m, uid_t owner,
                         uint64_t *body_len)
{
    uint64_t v;
    uint64_t nrcpt;
    uint64_t i;

    if (read_magic(r) < 0 || expect(r, "uid") < 0 ||
        number(r, "uid", UINT32_MAX, &v) < 0)
        return -1;
    if (v != (uint64_t)owner)
        return bad(r,
                   "uid %" PRIu64 " in the file, but the file belongs "
                   "to uid %lu",
                   v, (unsigned long)owner);
    if (expect(r, "arrival") < 0 || number(r, "arrival", INT64_MAX, &v) < 0)
        return -1;
    m->arrival = (int64_t)v;
    if (expect(r, "sender") < 0 || value(r, "sender", 1, &m->sender) < 0 ||
        optional_value(r, "envid", &m->envid) < 0 || read_ret(r, m) < 0 ||
        expect(r, "rcpts") < 0 || number(r, "rcpts", UINT32_MAX, &nrcpt) < 0)
        return -1;
    if (nrcpt == 0)
        return bad(r, "line %d: no recipients", r->line - 1);
    for (i = 0; i < nrcpt; i++)
        if (read_rcpt(r, m, i, nrcpt) < 0)
            return -1;
    if (peek(r, "rcpt"))
        return bad(r, "line %d: more recipients than the %" PRIu64 " announced",
                   r->line, nrcpt);
    if (expect(r, "body") < 0 || number(r, "body", UINT64_MAX, body_len) < 0)
        return -1;
    return 0;
}

/* The body and the "end" line; the body moves to the start of r->buf. */
static int read_body(struct reader *r, uint64_t body_len)
{
    size_t left = r->len - r->pos;
    size_t elen = strlen(END_LINE);

    if (body_len > left)
        return bad(r,
                   "truncated body: %" PRIu64 " bytes announced, %zu "
                   "present",
                   body_len, left);
    left -= (size_t)body_len;
    if (left < elen && memcmp(r->buf + r->pos + body_len, END_LINE, left) == 0)
        return bad(r, "truncated after the body: no \"end\" line");
    if (left < elen || memcmp(r->buf + r->pos + body_len, END_LINE, elen) != 0)
        return bad(r,
                   "body length mismatch: no \"end\" line after %" PRIu64
                   " bytes of body",
                   body_len);
    if (left > elen)
        return bad(r, "trailing junk: %zu bytes after the \"end\" line",
                   left - elen);
    memmove(r->buf, r->buf + r->pos, (size_t)body_len);
    r->buf[body_len] = 0;
    r->len = (size_t)body_len;
    return 0;
}

/*
 * Read the whole open file into memory, NUL-terminated. Its owner may
 * still be writing to it: reading stops past MAILDROP_SIZE_MAX, and
 * memory that cannot be had is an error (ENOMEM), not an abort.
 */
static int slurp(int fd, const struct stat *st, char **buf, size_t *len,
                 char *why, size_t whylen)
{
    size_t size = (size_t)st->st_size + 1;
    ssize_t n;
    char *p;

    *buf = NULL;
    *len = 0;
    for (;;) {
        if (*len > MAILDROP_SIZE_MAX) {
            snprintf(why, whylen, "too big: more than %lu bytes",
                     (unsigned long)MAILDROP_SIZE_MAX);
            errno = EBADMSG;
            return -1;
        }
        if (*buf == NULL || *len + 1 >= size) {
            if (*buf != NULL)
                size *= 2;
            if ((p = realloc(*buf, size)) == NULL) {
                snprintf(why, whylen, "read: %s", strerror(ENOMEM));
                errno = ENOMEM;
                return -1;
            }
            *buf = p;
        }
        n = read(fd, *buf + *len, size - *len - 1);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, whylen, "read: %s", strerror(errno));
            return -1;
        }
        *len += (size_t)n;
    }
    (*buf)[*len] = 0;
    return 0;
}

/* Open name in dirfd as a regular file with one link; fd or -1. */
static int open_file(int dirfd, const char *name, struct stat *st, char *why,
                     size_t whylen)
{
    int fd;
    int saved;

    fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP) {
            snprintf(why, whylen, "a symbolic link");
            errno = EBADMSG;
        } else if (errno == EACCES) {
            /* Its owner made it unreadable: user input like the rest. */
            snprintf(why, whylen, "not readable: %s", strerror(errno));
            errno = EBADMSG;
        } else {
            snprintf(why, whylen, "open: %s", strerror(errno));
        }
        return -1;
    }
    if (fstat(fd, st) < 0) {
        saved = errno;
        snprintf(why, whylen, "fstat: %s", strerror(errno));
        close(fd);
        errno = saved;
        return -1;
    }
    if (!S_ISREG(st->st_mode) || st->st_nlink != 1 ||
        (uintmax_t)st->st_size > MAILDROP_SIZE_MAX) {
        if (!S_ISREG(st->st_mode))
            snprintf(why, whylen, "not a regular file");
        else if (st->st_nlink != 1)
            snprintf(why, whylen, "%lu hard links: expected one",
                     (unsigned long)st->st_nlink);
        else
            snprintf(why, whylen, "too big: more than %lu bytes",
                     (unsigned long)MAILDROP_SIZE_MAX);
        close(fd);
        errno = EBADMSG;
        return -1;
    }
    return fd;
}

int maildrop_parse(char *buf, size_t len, uid_t owner, struct spool_msg **m,
                   char *why, size_t whylen)
{
    struct reader r;
    uint64_t body_len;

    memset(&r, 0, sizeof(r));
    r.buf = buf;
    r.len = len;
    r.line = 1;
    r.why = why;
    r.whylen = whylen;
    *m = spool_msg_new();
    if (read_envelope(&r, *m, owner, &body_len) < 0 ||
        read_body(&r, body_len) < 0) {
        spool_msg_free(*m);
        *m = NULL;
        free(buf);
        errno = EBADMSG;
        return -1;
    }
    (*m)->body = xrealloc(r.buf, r.len + 1);
    (*m)->size = r.len;
    return 0;
}

int maildrop_read(int dirfd, const char *name, struct spool_msg **m,
                  uid_t *owner, char *why, size_t whylen)
{
    struct stat st;
    char *buf;
    size_t len;
    int saved;
    int fd;

    *m = NULL;
    if (name[0] == '.' || strchr(name, '/') != NULL) {
        snprintf(why, whylen, "not a maildrop file name");
        errno = EINVAL;
        return -1;
    }
    if ((fd = open_file(dirfd, name, &st, why, whylen)) < 0)
        return -1;
    if (slurp(fd, &st, &buf, &len, why, whylen) < 0) {
        saved = errno;
        close(fd);
        free(buf);
        errno = saved;
        return -1;
    }
    close(fd);
    if (maildrop_parse(buf, len, st.st_uid, m, why, whylen) < 0)
        return -1;
    *owner = st.st_uid;
    return 0;
}

/* ------------------------------------------------------------- import */

struct entry {
    char *name;
    struct timespec mtime;
};

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a;
    const struct entry *y = b;

    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/*
 * The names of the complete files, oldest first; counts the stale
 * temporary files.
 */
static int list_files(int dirfd, struct entry **list, size_t *count,
                      struct maildrop_stats *st, char *why, size_t whylen)
{
    struct dirent *d;
    struct stat sb;
    size_t size = 0;
    time_t now = time(NULL);
    DIR *dp;
    int fd;

    *list = NULL;
    *count = 0;
    if ((fd = dup(dirfd)) < 0 || (dp = fdopendir(fd)) == NULL) {
        snprintf(why, whylen, "%s: %s", MAILDROP_DIR, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rewinddir(dp);
    while ((errno = 0, d = readdir(dp)) != NULL) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd, d->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* vanished */
        if (d->d_name[0] == '.') {
            if (sb.st_mtime < now - MAILDROP_STALE_AGE)
                st->stale++;
            continue;
        }
        if (*count == size) {
            size = size ? 2 * size : 64;
            *list = xrealloc(*list, size * sizeof(**list));
        }
        (*list)[*count].name = xstrdup(d->d_name);
        (*list)[(*count)++].mtime = sb.st_mtim;
    }
    if (errno != 0) {
        snprintf(why, whylen, "%s: %s", MAILDROP_DIR, strerror(errno));
        closedir(dp);
        return -1;
    }
    closedir(dp);
    if (*count > 0)
        qsort(*list, *count, sizeof(**list), entry_cmp);
    return 0;
}

static void entries_free(struct entry *list, size_t count)
{
    size_t i;

    for (i = 0; i < count; i++)
        free(list[i].name);
    free(list);
}

/* A name free in maildrop-bad for the file and its ".reason". */
static int bad_name(int baddirfd, const char *name, char *out, size_t outlen)
{
    char reason[NAME_MAX + 32];
    struct stat sb;
    int i;

    for (i = 0; i < BAD_SUFFIXES; i++) {
        if (i == 0)
            snprintf(out, outlen, "%s", name);
        else
            snprintf(out, outlen, "%s.%d", name, i);
        snprintf(reason, sizeof(reason), "%s.reason", out);
        if (fstatat(baddirfd, out, &sb, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno == ENOENT &&
            fstatat(baddirfd, reason, &sb, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno == ENOENT)
            return 0;
    }
    errno = EEXIST;
    return -1;
}

/* Write NAME.reason, then move the file beside it. */
static int move_aside(const char *queue_directory, int dirfd, const char *name,
                      const char *reason, char *why, size_t whylen)
{
    char path[PATH_MAX];
    char target[NAME_MAX + 16];
    char rname[NAME_MAX + 32];
    int bfd;
    int fd = -1;
    int status = -1;

    path_join(path, sizeof(path), queue_directory, MAILDROP_BAD_DIR);
    if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
        (bfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, whylen, "malformed (%s), and cannot open %s: %s", reason,
                 MAILDROP_BAD_DIR, strerror(errno));
        return -1;
    }
    if (bad_name(bfd, name, target, sizeof(target)) < 0) {
        snprintf(why, whylen, "malformed (%s), and no free name for it in %s",
                 reason, MAILDROP_BAD_DIR);
        goto done;
    }
    snprintf(rname, sizeof(rname), "%s.reason", target);
    fd = openat(bfd, rname,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, reason, strlen(reason)) < 0 ||
        write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
        snprintf(why, whylen, "malformed (%s), and cannot write %s/%s: %s",
                 reason, MAILDROP_BAD_DIR, rname, strerror(errno));
        goto done;
    }
    if (renameat(dirfd, name, bfd, target) < 0) {
        snprintf(why, whylen, "malformed (%s), and cannot move it to %s/%s: %s",
                 reason, MAILDROP_BAD_DIR, target, strerror(errno));
        unlinkat(bfd, rname, 0);
        goto done;
    }
    fsync(bfd);
    status = 0;

done:
    if (fd >= 0)
        close(fd);
    close(bfd);
    return status;
}

/* Remember the first problem, as "NAME: REASON". */
static void note(char *why, size_t whylen, int *status, const char *name,
                 const char *reason)
{
    if (*status == 0)
        snprintf(why, whylen, "%s: %s", name, reason);
    *status = -1;
}

/* Import one file; returns 1 to go on, 0 to stop. */
static int import_one(const char *queue_directory, int dirfd, const char *name,
                      maildrop_store_fn *store, void *ctx,
                      struct maildrop_stats *st, int *status, char *why,
                      size_t whylen)
{
    char reason[1024];
    char problem[2048];
    struct spool_msg *m;
    uid_t owner;
    int stored;

    if (maildrop_read(dirfd, name, &m, &owner, reason, sizeof(reason)) < 0) {
        if (errno == ENOENT)
            return 1;
        if (errno != EBADMSG) {
            st->failed++;
            note(why, whylen, status, name, reason);
        } else if (move_aside(queue_directory, dirfd, name, reason, problem,
                              sizeof(problem)) == 0) {
            st->malformed++;
        } else {
            st->failed++;
            note(why, whylen, status, name, problem);
        }
        return 1;
    }
    stored = store(ctx, m, owner, reason, sizeof(reason));
    spool_msg_free(m);
    if (stored < 0) {
        st->failed++;
        note(why, whylen, status, name, reason);
        return 0;
    }
    st->imported++;
    if (unlinkat(dirfd, name, 0) < 0) {
        snprintf(problem, sizeof(problem),
                 "stored, but cannot be removed (%s): it will be imported "
                 "again",
                 strerror(errno));
        note(why, whylen, status, name, problem);
        return 0;
    }
    return 1;
}

int maildrop_import(const char *queue_directory, maildrop_store_fn *store,
                    void *ctx, struct maildrop_stats *st, char *why,
                    size_t whylen)
{
    char path[PATH_MAX];
    struct entry *list;
    size_t count;
    size_t i;
    int status = 0;
    int dirfd;

    memset(st, 0, sizeof(*st));
    path_join(path, sizeof(path), queue_directory, MAILDROP_DIR);
    if ((dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (list_files(dirfd, &list, &count, st, why, whylen) < 0) {
        close(dirfd);
        return -1;
    }
    for (i = 0; i < count; i++)
        if (!import_one(queue_directory, dirfd, list[i].name, store, ctx, st,
                        &status, why, whylen))
            break;
    entries_free(list, count);
    close(dirfd);
    return status;
}
