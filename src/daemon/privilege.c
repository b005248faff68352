/*
 * NAME
 *	privilege 3 - sluiced gives up root: mail_owner
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	int	daemon_privilege_drop(const struct conf *conf,
 *			conf_warn_fn *warn, void *ctx, char *note,
 *			size_t notelen, char *why, size_t whylen)
 *	void	daemon_privilege_done(void)
 *	int	daemon_privilege_dropped(void)
 * DESCRIPTION
 *	sluiced started as root runs as mail_owner (decision 89): root
 *	only prepares what an unprivileged user cannot, and everything
 *	the daemon reads or writes afterwards (the configuration, TLS and
 *	DKIM keys, tables, the spool, its sockets, maillog_file) it reads
 *	and writes as mail_owner, at start as at each reload, so that a
 *	reload cannot fail on a file that the start could read.
 *
 *	daemon_privilege_drop() does nothing (and returns 0) when the
 *	process is not root, or when mail_owner is "root" or another user
 *	of uid 0. Otherwise it looks the user up: a user that does not
 *	exist is an error (-1, the reason in why) when mail_owner is set
 *	in the configuration, and a warning through warn (the process
 *	stays root) when mail_owner is at its built-in default, so that
 *	a machine on which sluice was built but not installed runs as it
 *	did. For an existing user it makes queue_directory (mode 0755) if
 *	missing and hands it to the user (the whole tree, when the
 *	directory itself belongs to someone else: a spool a root daemon
 *	made; symbolic links in it are changed, never followed; the
 *	directory itself may be one), creates a missing maillog_file for the user, then sets the
 *	groups to the user's primary group, the gid and the uid, keeping
 *	only CAP_NET_BIND_SERVICE so that the listeners of the start may
 *	still bind ports below 1024. It writes "USER (uid U, gid G)" into
 *	note on a drop, and an empty note otherwise.
 *
 *	daemon_privilege_done() gives up that last capability once every
 *	listener is bound: a reload binds nothing new (the listening
 *	addresses wait for a restart).
 *
 *	daemon_privilege_dropped() says whether this process gave up root
 *	(agent_user's check, decision 134).
 */

#define _XOPEN_SOURCE 700 /* nftw() */

#include "daemon/daemon.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int dropped; /* root given up: daemon_privilege_dropped() */

/* The owner nftw() hands the tree to (nftw() takes no context). */
static uid_t tree_uid;
static gid_t tree_gid;

static int chown_entry(const char *path, const struct stat *st, int flag,
                       struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return lchown(path, tree_uid, tree_gid) < 0 ? -1 : 0;
}

/* queue_directory, made if missing, belongs to the user. */
static int queue_prepare(const char *dir, const struct passwd *pw, char *why,
                         size_t whylen)
{
    char top[4096];
    struct stat st;

    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        snprintf(why, whylen, "mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    errno = 0;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "queue_directory %s: %s", dir,
                 errno ? strerror(errno) : "not a directory");
        return -1;
    }
    if (st.st_uid == pw->pw_uid && st.st_gid == pw->pw_gid)
        return 0;
    tree_uid = pw->pw_uid;
    tree_gid = pw->pw_gid;
    /* "DIR/": the directory a symbolic link names, nothing it holds */
    snprintf(top, sizeof(top), "%s/", dir);
    if (nftw(top, chown_entry, 16, FTW_PHYS) != 0) {
        snprintf(why, whylen, "cannot hand %s to mail_owner %s: %s", dir,
                 pw->pw_name, strerror(errno));
        return -1;
    }
    return 0;
}

/* A maillog_file that does not exist yet is made for the user. */
static int maillog_prepare(const char *path, const struct passwd *pw, char *why,
                           size_t whylen)
{
    int fd;

    if (path[0] == 0 || access(path, F_OK) == 0)
        return 0;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0 || fchown(fd, pw->pw_uid, pw->pw_gid) < 0) {
        snprintf(why, whylen, "maillog_file %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* The capabilities left: CAP_NET_BIND_SERVICE, or none (mask 0). */
static int caps_set(unsigned mask)
{
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];

    memset(data, 0, sizeof(data));
    data[0].effective = data[0].permitted = mask;
    return (int)syscall(SYS_capset, &head, data);
}

static int become(const struct passwd *pw, char *why, size_t whylen)
{
    if (prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) < 0 ||
        setgroups(1, &pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
        setuid(pw->pw_uid) < 0 || caps_set(1u << CAP_NET_BIND_SERVICE) < 0 ||
        prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) < 0) {
        snprintf(why, whylen, "cannot become mail_owner %s: %s", pw->pw_name,
                 strerror(errno));
        return -1;
    }
    if (setuid(0) == 0) /* a kernel that kept root would be a lie */
        util_panic("still root after dropping to uid %lu",
                   (unsigned long)pw->pw_uid);
    dropped = 1;
    return 0;
}

/* No such user: an error if the operator named it, else a warning. */
static int owner_missing(const struct conf *conf, const char *name,
                         conf_warn_fn *warn, void *ctx, char *why,
                         size_t whylen)
{
    struct conf_info info;
    char text[512];

    if (conf_lookup(conf, "mail_owner", &info) == 0 && info.is_set) {
        snprintf(why, whylen,
                 "mail_owner %s: no such user; create it (useradd --system "
                 "--user-group --no-create-home --shell /usr/sbin/nologin "
                 "%s) or set mail_owner = root",
                 name, name);
        return -1;
    }
    snprintf(text, sizeof(text),
             "mail_owner %s: no such user, running as root; create it "
             "(make install does) or set mail_owner = root",
             name);
    warn(ctx, text);
    return 0;
}

int daemon_privilege_drop(const struct conf *conf, conf_warn_fn *warn,
                          void *ctx, char *note, size_t notelen, char *why,
                          size_t whylen)
{
    const char *name = conf_str(conf, NULL, CONF_mail_owner);
    struct passwd *pw;

    note[0] = 0;
    if (geteuid() != 0)
        return 0;
    errno = 0;
    if ((pw = getpwnam(name)) == NULL) {
        if (errno != 0 && errno != ENOENT && errno != ESRCH) {
            snprintf(why, whylen, "mail_owner %s: %s", name, strerror(errno));
            return -1;
        }
        return owner_missing(conf, name, warn, ctx, why, whylen);
    }
    if (pw->pw_uid == 0)
        return 0;
    if (queue_prepare(conf_str(conf, NULL, CONF_queue_directory), pw, why,
                      whylen) < 0 ||
        maillog_prepare(conf_str(conf, NULL, CONF_maillog_file), pw, why,
                        whylen) < 0 ||
        become(pw, why, whylen) < 0)
        return -1;
    snprintf(note, notelen, "%s (uid %lu, gid %lu)", pw->pw_name,
             (unsigned long)pw->pw_uid, (unsigned long)pw->pw_gid);
    return 0;
}

int daemon_privilege_dropped(void)
{
    return dropped;
}

void daemon_privilege_done(void)
{
    if (geteuid() != 0)
        (void)caps_set(0);
}
