/*
 * NAME
 *	test_ingress_maildrop 1 - unit tests of the maildrop directory
 * SYNOPSIS
 *	build/tests/test_ingress_maildrop
 * DESCRIPTION
 *	Tests src/ingress/maildrop.c, drop.c and pickup.c in a queue
 *	directory made by mkdtemp() and removed at the end: the
 *	directories and their modes; the file format byte for byte; a
 *	round trip of a message with several recipients and a body
 *	holding every byte value; every kind of malformed file with its
 *	exact reason (truncated anywhere, bad magic, wrong version, bad
 *	fields, recipients and body lengths that do not match, trailing
 *	junk, links, directories, a recorded uid that is not the owner);
 *	the importer storing in age order, setting bad files aside with
 *	their reason, keeping files when the store fails, leaving and
 *	counting temporary files; and a few thousand seeded random
 *	mutations of a good file that must read as 0 or -1.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ingress/ingress.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WHY_SIZE 1024

static char qdir[64];    /* the queue directory */
static char drop[128];   /* its maildrop */
static char baddir[128]; /* its maildrop-bad */
static int dropfd = -1;

/* ------------------------------------------------------------ helpers */

static void empty_dir(const char *path)
{
    char file[PATH_MAX];
    struct dirent *d;
    struct stat st;
    DIR *dp = opendir(path);

    if (dp == NULL)
        return;
    while ((d = readdir(dp)) != NULL) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        snprintf(file, sizeof(file), "%s/%s", path, d->d_name);
        if (lstat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
            empty_dir(file);
            rmdir(file);
        } else {
            unlink(file);
        }
    }
    closedir(dp);
}

static int group_setup(void **state)
{
    char why[WHY_SIZE];

    (void)state;
    snprintf(qdir, sizeof(qdir), "%s", "/tmp/test_ingress_maildrop.XXXXXX");
    if (mkdtemp(qdir) == NULL)
        return -1;
    snprintf(drop, sizeof(drop), "%s/%s", qdir, MAILDROP_DIR);
    snprintf(baddir, sizeof(baddir), "%s/%s", qdir, MAILDROP_BAD_DIR);
    if (maildrop_create(qdir, why, sizeof(why)) < 0) {
        fprintf(stderr, "%s\n", why);
        return -1;
    }
    dropfd = open(drop, O_RDONLY | O_DIRECTORY);
    return dropfd < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    close(dropfd);
    empty_dir(qdir);
    return rmdir(qdir);
}

/* Each test starts with an empty maildrop and maildrop-bad. */
static int setup(void **state)
{
    (void)state;
    empty_dir(drop);
    mkdir(baddir, 0700);
    empty_dir(baddir);
    return 0;
}

static void put(const char *name, const char *data, size_t len)
{
    char path[PATH_MAX];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", drop, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static char *slurp(const char *path, size_t *len)
{
    static char buf[1 << 16];
    ssize_t n;
    int fd = open(path, O_RDONLY);

    assert_true(fd >= 0);
    n = read(fd, buf, sizeof(buf) - 1);
    assert_true(n >= 0);
    close(fd);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static int exists(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

/* How many entries a directory has (without "." and ".."). */
static int entries(const char *dir)
{
    struct dirent *d;
    DIR *dp = opendir(dir);
    int n = 0;

    assert_non_null(dp);
    while ((d = readdir(dp)) != NULL)
        if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
            n++;
    closedir(dp);
    return n;
}

static void set_age(const char *name, time_t seconds_ago)
{
    struct timespec ts[2];

    ts[0].tv_sec = ts[1].tv_sec = time(NULL) - seconds_ago;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    assert_int_equal(utimensat(dropfd, name, ts, 0), 0);
}

/* The message of the golden file. */
static struct spool_msg *golden_msg(void)
{
    static const char body[] = "Subject: hi\r\n\r\nhello\r\n";
    struct spool_msg *m = spool_msg_new();

    m->sender = strdup("alice@example.org");
    m->envid = strdup("ENV%1");
    m->ret = SPOOL_RET_HDRS;
    m->arrival = 1732233723000000;
    assert_int_equal(
        spool_msg_add_rcpt(m, "bob@example.org", "Bob@Example.org",
                           SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE,
                           "rfc822;Bob@Example.org"),
        0);
    assert_int_equal(spool_msg_add_rcpt(m, "\"c c\"@x", NULL, 0, NULL), 0);
    assert_int_equal(
        spool_msg_add_rcpt(m, "d@x", NULL, SPOOL_NOTIFY_NEVER, NULL), 0);
    m->body = strdup(body);
    m->size = strlen(body);
    return m;
}

/* The golden file, with the uid of this process. */
static size_t golden_text(char *buf, size_t len)
{
    return (size_t)snprintf(buf, len,
                            "sluice-maildrop 1\n"
                            "uid %lu\n"
                            "arrival 1732233723000000\n"
                            "sender alice@example.org\n"
                            "envid ENV%%251\n"
                            "ret hdrs\n"
                            "rcpts 3\n"
                            "rcpt bob@example.org\n"
                            "orig Bob@Example.org\n"
                            "orcpt rfc822;Bob@Example.org\n"
                            "notify success,failure\n"
                            "rcpt \"c%%20c\"@x\n"
                            "rcpt d@x\n"
                            "notify never\n"
                            "body 22\n"
                            "Subject: hi\r\n\r\nhello\r\n"
                            "end\n",
                            (unsigned long)geteuid());
}

/* A file of the given lines after "sluice-maildrop 1\nuid N\n". */
static size_t file_text(char *buf, size_t len, const char *rest)
{
    return (size_t)snprintf(buf, len, "sluice-maildrop 1\nuid %lu\n%s",
                            (unsigned long)geteuid(), rest);
}

static void read_fails_n(const char *data, size_t len, const char *expected)
{
    struct spool_msg *m = (struct spool_msg *)1;
    char why[WHY_SIZE] = "";
    uid_t owner = 12345;

    put("f", data, len);
    errno = 0;
    assert_int_equal(maildrop_read(dropfd, "f", &m, &owner, why, sizeof(why)),
                     -1);
    assert_int_equal(errno, EBADMSG);
    assert_null(m);
    assert_int_equal(owner, 12345);
    assert_string_equal(why, expected);
}

/* rest follows the magic and uid lines. */
static void read_fails(const char *rest, const char *expected)
{
    char buf[4096];

    read_fails_n(buf, file_text(buf, sizeof(buf), rest), expected);
}

/* ------------------------------------------------------------- create */

static void test_create(void **state)
{
    char why[WHY_SIZE];
    char other[128];
    char path[256];
    char expected[512];
    struct stat st;

    (void)state;
    assert_int_equal(stat(drop, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 01733);
    assert_int_equal(stat(baddir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    /* Again: nothing to do, existing modes are kept. */
    assert_int_equal(chmod(drop, 01730), 0);
    assert_int_equal(maildrop_create(qdir, why, sizeof(why)), 0);
    assert_int_equal(stat(drop, &st), 0);
    assert_int_equal(st.st_mode & 07777, 01730);
    assert_int_equal(chmod(drop, 01733), 0);

    /* A file where the directory should be. */
    snprintf(other, sizeof(other), "%s/other", qdir);
    assert_int_equal(mkdir(other, 0700), 0);
    snprintf(path, sizeof(path), "%s/maildrop", other);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    assert_int_equal(maildrop_create(other, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected), "%s: Not a directory", path);
    assert_string_equal(why, expected);
    unlink(path);
    rmdir(other);
    /* A queue directory that does not exist. */
    snprintf(path, sizeof(path), "%s/none", qdir);
    assert_int_equal(maildrop_create(path, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected),
             "%s/maildrop: No such file or directory", path);
    assert_string_equal(why, expected);
}

/* -------------------------------------------------------------- write */

static int is_name(const char *name)
{
    size_t i;

    for (i = 0; name[i] != 0; i++)
        if (!((name[i] >= '0' && name[i] <= '9') ||
              (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return i == MAILDROP_NAME_LEN;
}

static void test_write_format(void **state)
{
    struct spool_msg *m = golden_msg();
    char name[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    char expected[2048];
    char path[PATH_MAX];
    struct stat st;
    size_t elen;
    size_t len;
    char *got;

    (void)state;
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), 0);
    assert_true(is_name(name));
    assert_int_equal(entries(drop), 1); /* no temporary file left */
    snprintf(path, sizeof(path), "%s/%s", drop, name);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0444);
    assert_int_equal(st.st_uid, geteuid());
    got = slurp(path, &len);
    elen = golden_text(expected, sizeof(expected));
    assert_int_equal(len, elen);
    assert_memory_equal(got, expected, len);
    spool_msg_free(m);
}

static void test_round_trip(void **state)
{
    struct spool_msg *m = spool_msg_new();
    struct spool_msg *r;
    char name[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    char addr[64];
    uid_t owner;
    int64_t before = util_clock_wall_us();
    size_t i;

    (void)state;
    m->sender = strdup(""); /* the null sender */
    for (i = 0; i < 40; i++) {
        snprintf(addr, sizeof(addr), "r%zu%s@example.org", i,
                 i % 5 == 0 ? "%\x01\xff" : "");
        assert_int_equal(spool_msg_add_rcpt(m, addr, i % 3 ? NULL : "orig%",
                                            (unsigned)(i % 16),
                                            i % 4 ? NULL : "rfc822;x y"),
                         0);
    }
    m->size = 256 * 3 + 10;
    m->body = malloc(m->size);
    for (i = 0; i < 256 * 3; i++)
        m->body[i] = (char)(i % 256);
    memcpy(m->body + 256 * 3, "\nend\nend\n\0", 10);

    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), 0);
    if (maildrop_read(dropfd, name, &r, &owner, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_int_equal(owner, geteuid());
    assert_string_equal(r->sender, "");
    assert_null(r->envid);
    assert_int_equal(r->ret, SPOOL_RET_DEFAULT);
    /* arrival 0 was "now": between the clock read before and after,
     * with a minute's slack either way, for a system clock that is
     * stepped meanwhile (a virtual machine's can be, by seconds). */
    assert_true(r->arrival >= before - 60 * (int64_t)1000000);
    assert_true(r->arrival <= util_clock_wall_us() + 60 * (int64_t)1000000);
    assert_int_equal(r->nrcpt, 40);
    for (i = 0; i < 40; i++) {
        assert_string_equal(r->rcpt[i].address, m->rcpt[i].address);
        if (m->rcpt[i].orig == NULL)
            assert_null(r->rcpt[i].orig);
        else
            assert_string_equal(r->rcpt[i].orig, m->rcpt[i].orig);
        if (m->rcpt[i].orcpt == NULL)
            assert_null(r->rcpt[i].orcpt);
        else
            assert_string_equal(r->rcpt[i].orcpt, m->rcpt[i].orcpt);
        /* NEVER alone is what the format keeps of NEVER|x */
        assert_int_equal(r->rcpt[i].notify,
                         m->rcpt[i].notify & SPOOL_NOTIFY_NEVER
                             ? SPOOL_NOTIFY_NEVER
                             : m->rcpt[i].notify);
    }
    assert_int_equal(r->size, m->size);
    assert_memory_equal(r->body, m->body, m->size);
    assert_int_equal(r->body[r->size], 0);
    spool_msg_free(r);

    /* The golden message reads back as it was. */
    spool_msg_free(m);
    m = golden_msg();
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), 0);
    assert_int_equal(maildrop_read(dropfd, name, &r, &owner, why, sizeof(why)),
                     0);
    assert_string_equal(r->sender, "alice@example.org");
    assert_string_equal(r->envid, "ENV%1");
    assert_int_equal(r->ret, SPOOL_RET_HDRS);
    assert_int_equal(r->arrival, 1732233723000000);
    assert_int_equal(r->nrcpt, 3);
    assert_string_equal(r->rcpt[1].address, "\"c c\"@x");
    assert_int_equal(r->rcpt[2].notify, SPOOL_NOTIFY_NEVER);
    assert_int_equal(r->size, 22);
    assert_string_equal(r->body, "Subject: hi\r\n\r\nhello\r\n");
    assert_int_equal(r->smtputf8, 0); /* a file without the line */
    spool_msg_free(r);

    /* SMTPUTF8 asked for: one more line, read back. */
    m->smtputf8 = 1;
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), 0);
    assert_int_equal(maildrop_read(dropfd, name, &r, &owner, why, sizeof(why)),
                     0);
    assert_int_equal(r->smtputf8, 1);
    assert_int_equal(r->ret, SPOOL_RET_HDRS);
    spool_msg_free(r);
    spool_msg_free(m);
}

static void test_write_errors(void **state)
{
    struct spool_msg *m = spool_msg_new();
    char name[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];

    (void)state;
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), -1);
    assert_string_equal(why, "message has no sender");
    m->sender = strdup("a@b");
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), -1);
    assert_string_equal(why, "message has no recipients");
    spool_msg_add_rcpt(m, "x@y", NULL, 0, NULL);
    spool_msg_add_rcpt(m, "", NULL, 0, NULL);
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), -1);
    assert_string_equal(why, "recipient 2 has no address");
    m->nrcpt = 1;
    m->size = 5;
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), -1);
    assert_string_equal(why, "message has no body");
    m->size = 0;
    assert_int_equal(
        maildrop_write("/nonexistent", m, name, sizeof(name), why, sizeof(why)),
        -1);
    assert_memory_equal(why, "create /nonexistent/.", 21);
    assert_string_equal(why + 21 + MAILDROP_NAME_LEN,
                        ": No such file or directory");
    assert_int_equal(entries(drop), 0);
    m->nrcpt = 2; /* so that spool_msg_free() frees both */
    spool_msg_free(m);
}

/* The importer must be able to read the file, whatever the umask. */
static void test_write_mode_past_umask(void **state)
{
    struct spool_msg *m = golden_msg();
    char name[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    struct stat st;
    mode_t old = umask(077);

    (void)state;
    assert_int_equal(
        maildrop_write(drop, m, name, sizeof(name), why, sizeof(why)), 0);
    umask(old);
    assert_int_equal(fstatat(dropfd, name, &st, 0), 0);
    assert_int_equal(st.st_mode & 07777, 0444);
    spool_msg_free(m);
}

/* --------------------------------------------------------------- read */

static void test_read_magic_and_version(void **state)
{
    char buf[256];

    (void)state;
    read_fails_n("", 0, "empty file");
    read_fails_n("hello\n", 6,
                 "bad magic \"hello\": not a sluice maildrop "
                 "file");
    read_fails_n("\x00\x01\xff", 3,
                 "bad magic \"\\x00\\x01\\xff\": not a "
                 "sluice maildrop file");
    read_fails_n("sluice-maildrop", 15,
                 "bad magic \"sluice-maildrop\": not "
                 "a sluice maildrop file");
    read_fails_n("sluice-maildrop 1", 17, "truncated at line 1");
    read_fails_n("sluice-maildrop 2\nuid 0\n", 24, "unsupported version \"2\"");
    read_fails_n("sluice-maildrop 1\r\nuid 0\r\n", 26,
                 "unsupported version \"1\\x0d\"");
    read_fails_n("sluice-maildrop 10\n", 19, "unsupported version \"10\"");
    snprintf(buf, sizeof(buf), "SLUICE-MAILDROP 1\nuid %lu\n",
             (unsigned long)geteuid());
    read_fails_n(buf, strlen(buf),
                 "bad magic \"SLUICE-MAILDROP 1\": not a "
                 "sluice maildrop file");
}

static void test_read_truncated_everywhere(void **state)
{
    struct spool_msg *m;
    char good[2048];
    char why[WHY_SIZE];
    uid_t owner;
    size_t len = golden_text(good, sizeof(good));
    size_t cut;

    (void)state;
    for (cut = 0; cut < len; cut++) {
        put("f", good, cut);
        errno = 0;
        if (maildrop_read(dropfd, "f", &m, &owner, why, sizeof(why)) != -1)
            fail_msg("read a file cut at %zu of %zu", cut, len);
        assert_int_equal(errno, EBADMSG);
    }
    put("f", good, len);
    assert_int_equal(maildrop_read(dropfd, "f", &m, &owner, why, sizeof(why)),
                     0);
    spool_msg_free(m);
}

static void test_read_truncated_reasons(void **state)
{
    char good[2048];
    size_t len = golden_text(good, sizeof(good));

    (void)state;
    /* Inside "arrival ..." (line 3). */
    read_fails_n(good, (size_t)(strstr(good, "arrival") - good) + 5,
                 "truncated at line 3");
    /* Inside the second recipient's line (line 12). */
    read_fails_n(good, (size_t)(strstr(good, "rcpt \"c") - good),
                 "truncated at line 12");
    /* Inside the body: 22 announced. */
    read_fails_n(good, (size_t)(strstr(good, "hello") - good),
                 "truncated body: 22 bytes announced, 15 present");
    /* Inside or without the last line. */
    read_fails_n(good, len - 1, "truncated after the body: no \"end\" line");
    read_fails_n(good, len - 4, "truncated after the body: no \"end\" line");
}

static void test_read_body_length(void **state)
{
    (void)state;
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nbody 5\n"
               "hello!end\n",
               "body length mismatch: no \"end\" line after 5 bytes of body");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nbody 7\n"
               "hello!end\n",
               "body length mismatch: no \"end\" line after 7 bytes of body");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nbody 5\n"
               "helloend\njunk",
               "trailing junk: 4 bytes after the \"end\" line");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nbody 5\n"
               "helloend\nend\n",
               "trailing junk: 4 bytes after the \"end\" line");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nbody 5\n"
               "helloEND\n",
               "body length mismatch: no \"end\" line after 5 bytes of body");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\n"
               "body 18446744073709551615\nhello",
               "truncated body: 18446744073709551615 bytes announced, 5 "
               "present");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\n"
               "body 18446744073709551616\nhello",
               "line 7: bad body \"18446744073709551616\"");
}

static void test_read_recipients(void **state)
{
    (void)state;
    read_fails("arrival 1\nsender a@b\nrcpts 0\nbody 0\nend\n",
               "line 5: no recipients");
    read_fails("arrival 1\nsender a@b\nrcpts 2\nrcpt x@y\nbody 0\nend\n",
               "line 7: expected \"rcpt\" (recipient 2 of 2), found \"body\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nrcpt z@y\n"
               "body 0\nend\n",
               "line 7: more recipients than the 1 announced");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nbody 0\nend\n",
               "line 6: expected \"rcpt\" (recipient 1 of 1), found \"body\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt\nbody 0\nend\n",
               "line 6: expected \"rcpt\" (recipient 1 of 1), found \"rcpt\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt \nbody 0\nend\n",
               "line 6: bad rcpt \"\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt a b\nbody 0\nend\n",
               "line 6: bad rcpt \"a b\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\norcpt r\norig o\n"
               "body 0\nend\n",
               "line 8: expected \"body\", found \"orig\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nnotify "
               "failure,success\nbody 0\nend\n",
               "line 7: bad notify \"failure,success\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nnotify "
               "never,success\nbody 0\nend\n",
               "line 7: bad notify \"never,success\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nnotify NEVER\n"
               "body 0\nend\n",
               "line 7: bad notify \"NEVER\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nnotify \n"
               "body 0\nend\n",
               "line 7: bad notify \"\"");
    read_fails("arrival 1\nsender a@b\nrcpts 4294967296\nrcpt x@y\n"
               "body 0\nend\n",
               "line 5: bad rcpts \"4294967296\"");
}

static void test_read_fields(void **state)
{
    char buf[256];

    (void)state;
    read_fails("arrival x\n", "line 3: bad arrival \"x\"");
    read_fails("arrival -1\n", "line 3: bad arrival \"-1\"");
    read_fails("arrival 01\n", "line 3: bad arrival \"01\"");
    read_fails("arrival \n", "line 3: bad arrival \"\"");
    read_fails("arrival 9223372036854775808\n",
               "line 3: bad arrival \"9223372036854775808\"");
    read_fails("arrival\n", "line 3: \"arrival\" without a value");
    read_fails("color red\n", "line 3: expected \"arrival\", found \"color\"");
    read_fails("arrival 1\ncolor red\n",
               "line 4: expected \"sender\", found \"color\"");
    read_fails("arrival 1\nsender a%zz\n", "line 4: bad sender \"a%zz\"");
    read_fails("arrival 1\nsender a%2a\n", "line 4: bad sender \"a%2a\"");
    read_fails("arrival 1\nsender a%00b\n", "line 4: bad sender \"a%00b\"");
    read_fails("arrival 1\nsender a%2\n", "line 4: bad sender \"a%2\"");
    read_fails("arrival 1\nsender a\tb\n", "line 4: bad sender \"a\\x09b\"");
    read_fails("arrival 1\nsender a\r\n", "line 4: bad sender \"a\\x0d\"");
    read_fails("arrival 1\nsender a\xc3\xa9\n",
               "line 4: bad sender \"a\\xc3\\xa9\"");
    read_fails("arrival 1\nsender\n", "line 4: \"sender\" without a value");
    read_fails("arrival 1\nsender a@b\nenvid \n", "line 5: bad envid \"\"");
    read_fails("arrival 1\nsender a@b\nret maybe\n",
               "line 5: bad ret \"maybe\"");
    read_fails("arrival 1\nsender a@b\nret FULL\n", "line 5: bad ret \"FULL\"");
    read_fails("arrival 1\nsender a@b\nret hdrs\nenvid e\n",
               "line 6: expected \"rcpts\", found \"envid\"");
    read_fails("arrival 1\nsender a@b\nenvid e\nenvid f\n",
               "line 6: expected \"rcpts\", found \"envid\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nbody x\n",
               "line 7: bad body \"x\"");
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\nend\n",
               "line 7: expected \"body\", found \"end\"");
    /* The quoted text is cut after 40 bytes. */
    read_fails("arrival 1\nsender a@b\nrcpts 1\nrcpt x@y\n"
               "bodybodybodybodybodybodybodybodybodybodybody 0\n",
               "line 7: expected \"body\", found "
               "\"bodybodybodybodybodybodybodybodybodybody...\"");
    /* A uid that is not the owner's. */
    snprintf(buf, sizeof(buf), "sluice-maildrop 1\nuid %lu\n",
             (unsigned long)geteuid() + 4242);
    snprintf(buf + strlen(buf), 64, "%s", "arrival 1\n");
    {
        char expected[128];

        snprintf(expected, sizeof(expected),
                 "uid %lu in the file, but the file belongs to uid %lu",
                 (unsigned long)geteuid() + 4242, (unsigned long)geteuid());
        read_fails_n(buf, strlen(buf), expected);
    }
    read_fails_n("sluice-maildrop 1\nuid 4294967296\n", 33,
                 "line 2: bad uid \"4294967296\"");
    read_fails_n("sluice-maildrop 1\nuuid 0\n", 25,
                 "line 2: expected \"uid\", found \"uuid\"");
}

static void read_errno(const char *name, int expected_errno,
                       const char *expected)
{
    struct spool_msg *m;
    char why[WHY_SIZE];
    uid_t owner;

    errno = 0;
    assert_int_equal(maildrop_read(dropfd, name, &m, &owner, why, sizeof(why)),
                     -1);
    assert_int_equal(errno, expected_errno);
    assert_string_equal(why, expected);
    assert_null(m);
}

static void test_read_file_kinds(void **state)
{
    char good[2048];
    size_t len = golden_text(good, sizeof(good));

    (void)state;
    put("good", good, len);
    assert_int_equal(symlinkat("good", dropfd, "link"), 0);
    read_errno("link", EBADMSG, "a symbolic link");
    assert_int_equal(linkat(dropfd, "good", dropfd, "hard", 0), 0);
    read_errno("hard", EBADMSG, "2 hard links: expected one");
    read_errno("good", EBADMSG, "2 hard links: expected one");
    assert_int_equal(unlinkat(dropfd, "hard", 0), 0);
    assert_int_equal(mkdirat(dropfd, "dir", 0700), 0);
    read_errno("dir", EBADMSG, "not a regular file");
    assert_int_equal(mkfifoat(dropfd, "fifo", 0600), 0);
    read_errno("fifo", EBADMSG, "not a regular file");
    read_errno("missing", ENOENT, "open: No such file or directory");
    /* Too big to be read at all (a sparse file: no disk used). */
    {
        char expected[64];
        int fd = openat(dropfd, "huge", O_WRONLY | O_CREAT, 0600);

        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)MAILDROP_SIZE_MAX + 1), 0);
        close(fd);
        snprintf(expected, sizeof(expected), "too big: more than %lu bytes",
                 (unsigned long)MAILDROP_SIZE_MAX);
        read_errno("huge", EBADMSG, expected);
        assert_int_equal(unlinkat(dropfd, "huge", 0), 0);
    }
    read_errno(".good", EINVAL, "not a maildrop file name");
    read_errno("a/b", EINVAL, "not a maildrop file name");
}

/* ------------------------------------------------------------- import */

struct store_log {
    int calls;
    int fail_at;       /* fail the call with this number (1-based) */
    char senders[256]; /* "|"-joined */
    uid_t owner;
};

static int store_fn(void *ctx, struct spool_msg *m, uid_t owner, char *why,
                    size_t whylen)
{
    struct store_log *log = ctx;
    size_t used = strlen(log->senders);

    log->calls++;
    if (log->calls == log->fail_at) {
        snprintf(why, whylen, "spool full");
        return -1;
    }
    snprintf(log->senders + used, sizeof(log->senders) - used, "%s%s",
             used ? "|" : "", m->sender);
    log->owner = owner;
    return 0;
}

/* Write a one-recipient message from sender; its name in name. */
static void drop_msg(const char *sender, char *name)
{
    struct spool_msg *m = spool_msg_new();
    char why[WHY_SIZE];

    m->sender = strdup(sender);
    m->arrival = 1;
    spool_msg_add_rcpt(m, "x@y", NULL, 0, NULL);
    m->body = strdup("B\r\n");
    m->size = 3;
    if (maildrop_write(drop, m, name, MAILDROP_NAME_LEN + 1, why,
                       sizeof(why)) != 0)
        fail_msg("%s", why);
    spool_msg_free(m);
}

static void test_import(void **state)
{
    struct store_log log = {0, 0, "", 99};
    struct maildrop_stats st;
    char a[MAILDROP_NAME_LEN + 1];
    char b[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE] = "";
    char path[PATH_MAX];
    size_t len;

    (void)state;
    drop_msg("first@x", a);
    set_age(a, 100);
    drop_msg("second@x", b);
    set_age(b, 50);
    put("junk", "hello\n", 6);
    put(".0123456789abcdef", "partial", 7); /* being written */
    put(".fedcba9876543210", "partial", 7); /* its writer died */
    set_age(".fedcba9876543210", 2 * 3600);
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), 0);
    assert_string_equal(why, "");
    assert_int_equal(st.imported, 2);
    assert_int_equal(st.malformed, 1);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.stale, 1);
    assert_string_equal(log.senders, "first@x|second@x");
    assert_int_equal(log.owner, geteuid());
    /* Only the temporary files are left. */
    assert_int_equal(entries(drop), 2);
    assert_true(exists(drop, ".0123456789abcdef"));
    assert_true(exists(drop, ".fedcba9876543210"));
    /* The bad file is aside, with its reason. */
    assert_int_equal(entries(baddir), 2);
    snprintf(path, sizeof(path), "%s/junk", baddir);
    assert_string_equal(slurp(path, &len), "hello\n");
    snprintf(path, sizeof(path), "%s/junk.reason", baddir);
    assert_string_equal(slurp(path, &len),
                        "bad magic \"hello\": not a sluice maildrop file\n");
    /* Nothing more to do. */
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), 0);
    assert_int_equal(st.imported + st.malformed + st.failed, 0);
    assert_int_equal(st.stale, 1);
    assert_int_equal(log.calls, 2);
}

static void test_import_order(void **state)
{
    struct store_log log = {0, 0, "", 0};
    struct maildrop_stats st;
    char names[4][MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    int i;

    (void)state;
    drop_msg("c@x", names[0]);
    drop_msg("a@x", names[1]);
    drop_msg("d@x", names[2]);
    drop_msg("b@x", names[3]);
    set_age(names[0], 30);
    set_age(names[1], 50);
    set_age(names[2], 20);
    set_age(names[3], 40);
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), 0);
    assert_string_equal(log.senders, "a@x|b@x|c@x|d@x");
    assert_int_equal(st.imported, 4);
    for (i = 0; i < 4; i++)
        assert_false(exists(drop, names[i]));
}

static void test_import_store_fails(void **state)
{
    struct store_log log = {0, 1, "", 0};
    struct maildrop_stats st;
    char a[MAILDROP_NAME_LEN + 1];
    char b[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    char expected[128];

    (void)state;
    drop_msg("first@x", a);
    set_age(a, 100);
    drop_msg("second@x", b);
    set_age(b, 50);
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected), "%s: spool full", a);
    assert_string_equal(why, expected);
    assert_int_equal(st.imported, 0);
    assert_int_equal(st.failed, 1);
    assert_int_equal(log.calls, 1); /* stopped at the first failure */
    assert_true(exists(drop, a));
    assert_true(exists(drop, b));
    assert_int_equal(entries(baddir), 0);

    /* Now the second store fails: the first file is gone. */
    log.calls = 0;
    log.fail_at = 2;
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected), "%s: spool full", b);
    assert_string_equal(why, expected);
    assert_int_equal(st.imported, 1);
    assert_int_equal(st.failed, 1);
    assert_false(exists(drop, a));
    assert_true(exists(drop, b));
    assert_string_equal(log.senders, "first@x");
}

static void test_import_bad_name_taken(void **state)
{
    struct store_log log = {0, 0, "", 0};
    struct maildrop_stats st;
    char why[WHY_SIZE];
    char path[PATH_MAX];
    size_t len;

    (void)state;
    snprintf(path, sizeof(path), "%s/junk", baddir);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    snprintf(path, sizeof(path), "%s/junk.1.reason", baddir);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    put("junk", "sluice-maildrop 7\n", 18);
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), 0);
    assert_int_equal(st.malformed, 1);
    snprintf(path, sizeof(path), "%s/junk.2", baddir);
    assert_string_equal(slurp(path, &len), "sluice-maildrop 7\n");
    snprintf(path, sizeof(path), "%s/junk.2.reason", baddir);
    assert_string_equal(slurp(path, &len), "unsupported version \"7\"\n");
    assert_int_equal(entries(baddir), 4);
    assert_int_equal(entries(drop), 0);
}

static void test_import_kinds_aside(void **state)
{
    struct store_log log = {0, 0, "", 0};
    struct maildrop_stats st;
    char why[WHY_SIZE];
    char path[PATH_MAX];
    struct stat sb;
    size_t len;

    (void)state;
    assert_int_equal(rmdir(baddir), 0); /* created again when needed */
    assert_int_equal(mkdirat(dropfd, "dir", 0700), 0);
    assert_int_equal(symlinkat("/etc/passwd", dropfd, "link"), 0);
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), 0);
    assert_int_equal(st.malformed, 2);
    assert_int_equal(stat(baddir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0700);
    snprintf(path, sizeof(path), "%s/dir.reason", baddir);
    assert_string_equal(slurp(path, &len), "not a regular file\n");
    snprintf(path, sizeof(path), "%s/link.reason", baddir);
    assert_string_equal(slurp(path, &len), "a symbolic link\n");
    snprintf(path, sizeof(path), "%s/link", baddir);
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode)); /* moved, not followed */
    assert_int_equal(entries(drop), 0);
    assert_int_equal(log.calls, 0);
}

/* Root can give a file away: the owner, not the file, says who sent it. */
static void test_import_foreign_owner(void **state)
{
    struct store_log log = {0, 0, "", 0};
    struct maildrop_stats st;
    char name[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    char path[PATH_MAX];
    char expected[128];
    size_t len;

    (void)state;
    if (geteuid() != 0)
        skip();
    drop_msg("who@x", name);
    snprintf(path, sizeof(path), "%s/%s", drop, name);
    assert_int_equal(chown(path, 4242, 4242), 0);
    assert_int_equal(
        maildrop_import(qdir, store_fn, &log, &st, why, sizeof(why)), 0);
    assert_int_equal(st.malformed, 1);
    snprintf(path, sizeof(path), "%s/%s.reason", baddir, name);
    snprintf(expected, sizeof(expected),
             "uid 0 in the file, but the file belongs to uid 4242\n");
    assert_string_equal(slurp(path, &len), expected);
}

/* Run fn in a child with the given uid and gid; its exit status. */
static int as_user(uid_t uid, int (*fn)(const char *), const char *arg)
{
    pid_t pid = fork();
    int status;

    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)
            _exit(100);
        _exit(fn(arg));
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static int child_create(const char *q)
{
    char why[WHY_SIZE];

    return maildrop_create(q, why, sizeof(why)) == 0 ? 0 : 1;
}

/* A user with umask 077 drops a message and an unreadable file. */
static int child_write(const char *q)
{
    struct spool_msg *m = spool_msg_new();
    char name[MAILDROP_NAME_LEN + 1];
    char why[WHY_SIZE];
    char dir[PATH_MAX];
    int fd;
    int status;

    umask(077);
    snprintf(dir, sizeof(dir), "%s/%s", q, MAILDROP_DIR);
    m->sender = strdup("user@x");
    spool_msg_add_rcpt(m, "r@y", NULL, 0, NULL);
    status = maildrop_write(dir, m, name, sizeof(name), why, sizeof(why));
    spool_msg_free(m);
    snprintf(dir + strlen(dir), 16, "/%s", "secret");
    if ((fd = open(dir, O_WRONLY | O_CREAT | O_EXCL, 0)) < 0)
        return 2;
    close(fd);
    return status == 0 ? 0 : 1;
}

static int child_import(const char *q)
{
    struct store_log log = {0, 0, "", 0};
    struct maildrop_stats st;
    char why[WHY_SIZE];

    if (maildrop_import(q, store_fn, &log, &st, why, sizeof(why)) != 0)
        return 1;
    if (st.imported != 1 || st.malformed != 1 || st.failed != 0)
        return 2;
    return strcmp(log.senders, "user@x") == 0 && log.owner == 65534 ? 0 : 3;
}

/*
 * The real arrangement, with root only: a spool owner (uid 1) that is
 * not root imports what another user (uid 65534) dropped.
 */
static void test_cross_user(void **state)
{
    char q[PATH_MAX];
    char path[PATH_MAX + 64];
    size_t len;

    (void)state;
    if (geteuid() != 0)
        skip();
    snprintf(q, sizeof(q), "%s/cross", qdir);
    assert_int_equal(mkdir(q, 0755), 0);
    assert_int_equal(chown(q, 1, 1), 0);
    assert_int_equal(chmod(qdir, 0755), 0);
    assert_int_equal(as_user(1, child_create, q), 0);
    assert_int_equal(as_user(65534, child_write, q), 0);
    assert_int_equal(as_user(1, child_import, q), 0);
    assert_int_equal(chmod(qdir, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s/secret.reason", q, MAILDROP_BAD_DIR);
    assert_string_equal(slurp(path, &len), "not readable: Permission denied\n");
    snprintf(path, sizeof(path), "%s/%s", q, MAILDROP_DIR);
    assert_int_equal(entries(path), 0);
}

static void test_import_no_maildrop(void **state)
{
    struct store_log log = {0, 0, "", 0};
    struct maildrop_stats st;
    char why[WHY_SIZE];
    char expected[256];

    (void)state;
    assert_int_equal(
        maildrop_import("/nonexistent", store_fn, &log, &st, why, sizeof(why)),
        -1);
    snprintf(expected, sizeof(expected),
             "/nonexistent/maildrop: No such file or directory");
    assert_string_equal(why, expected);
}

/* ------------------------------------------------------ random junk */

static uint32_t rnd_state = 88172645u;

static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return rnd_state;
}

/* A mutation of the good file into buf; returns its length. */
static size_t mutate(const char *good, size_t len, char *buf, size_t size)
{
    size_t n = len;
    size_t i;
    size_t at;
    size_t k;

    memcpy(buf, good, len);
    switch (rnd() % 6) {
    case 0: /* random bytes */
        n = rnd() % 300;
        for (i = 0; i < n; i++)
            buf[i] = (char)(rnd() & 0xff);
        break;
    case 1: /* flip some bytes */
        for (k = 1 + rnd() % 4; k > 0; k--)
            buf[rnd() % len] ^= (char)(1u << (rnd() % 8));
        break;
    case 2: /* cut */
        n = rnd() % len;
        break;
    case 3: /* insert bytes */
        at = rnd() % len;
        k = 1 + rnd() % 8;
        memmove(buf + at + k, buf + at, len - at);
        for (i = 0; i < k; i++)
            buf[at + i] = "\n %0123456789abcdefrcpt"[rnd() % 24];
        n = len + k;
        break;
    case 4: /* remove bytes */
        at = rnd() % len;
        k = 1 + rnd() % 8;
        if (at + k > len)
            k = len - at;
        memmove(buf + at, buf + at + k, len - at - k);
        n = len - k;
        break;
    default: /* repeat a piece */
        at = rnd() % len;
        k = 1 + rnd() % 40;
        if (at + k > len)
            k = len - at;
        memmove(buf + at + k, buf + at, len - at);
        n = len + k;
        break;
    }
    assert_true(n <= size);
    return n;
}

static void test_read_random_junk(void **state)
{
    struct spool_msg *m;
    char good[2048];
    char buf[4096];
    char why[WHY_SIZE];
    uid_t owner;
    size_t len = golden_text(good, sizeof(good));
    size_t n;
    int iter;
    int ok = 0;
    int status;

    (void)state;
    for (iter = 0; iter < 3000; iter++) {
        n = mutate(good, len, buf, sizeof(buf));
        put("f", buf, n);
        why[0] = 0;
        errno = 0;
        status = maildrop_read(dropfd, "f", &m, &owner, why, sizeof(why));
        if (status == 0) {
            ok++;
            assert_true(m->nrcpt >= 1);
            assert_non_null(m->sender);
            assert_int_equal(m->body[m->size], 0);
            spool_msg_free(m);
        } else {
            assert_int_equal(status, -1);
            assert_int_equal(errno, EBADMSG);
            assert_true(why[0] != 0);
            assert_null(m);
        }
    }
    print_message("%d of 3000 mutated files read\n", ok);
    assert_true(ok > 30);
    assert_true(ok < 2970);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_create, setup),
        cmocka_unit_test_setup(test_write_format, setup),
        cmocka_unit_test_setup(test_round_trip, setup),
        cmocka_unit_test_setup(test_write_errors, setup),
        cmocka_unit_test_setup(test_write_mode_past_umask, setup),
        cmocka_unit_test_setup(test_read_magic_and_version, setup),
        cmocka_unit_test_setup(test_read_truncated_everywhere, setup),
        cmocka_unit_test_setup(test_read_truncated_reasons, setup),
        cmocka_unit_test_setup(test_read_body_length, setup),
        cmocka_unit_test_setup(test_read_recipients, setup),
        cmocka_unit_test_setup(test_read_fields, setup),
        cmocka_unit_test_setup(test_read_file_kinds, setup),
        cmocka_unit_test_setup(test_import, setup),
        cmocka_unit_test_setup(test_import_order, setup),
        cmocka_unit_test_setup(test_import_store_fails, setup),
        cmocka_unit_test_setup(test_import_bad_name_taken, setup),
        cmocka_unit_test_setup(test_import_kinds_aside, setup),
        cmocka_unit_test_setup(test_import_foreign_owner, setup),
        cmocka_unit_test_setup(test_cross_user, setup),
        cmocka_unit_test_setup(test_import_no_maildrop, setup),
        cmocka_unit_test_setup(test_read_random_junk, setup),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
