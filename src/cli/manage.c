/*
 * NAME
 *	manage 3 - "sluice delete|hold|release|requeue ID...|ALL"
 * SYNOPSIS
 *	sluice delete ID...|ALL|-
 *	sluice hold ID...|ALL|-
 *	sluice release ID...|ALL|-
 *	sluice requeue ID...|ALL|-
 *	sluice recover
 * DESCRIPTION
 *	delete removes messages with everything they have. hold stops a
 *	message from being delivered (it leaves the incoming and deferred
 *	lists) until release puts it back where it was. requeue makes
 *	deferred mail due now; incoming mail is due already, held mail
 *	stays held (release it first), corrupt mail cannot be requeued.
 *	ALL means every message in the spool; - reads the queue ids from
 *	standard input, one per line, as postsuper -d - does (so that
 *	mailq's output, filtered, can be fed to it). An id may keep the
 *	mark mailq puts after it ("*" active, "!" on hold).
 *
 *	recover runs the spool's start-up recovery, as the daemon does when
 *	it starts: mail left active goes back to incoming, and a message
 *	with a record that cannot be decoded moves to corrupt, with the
 *	reason (its raw record is kept). It prints what it did.
 *
 *	Each change is a transaction of its own, so the commands are safe
 *	while mail is being stored or delivered. Each message changed is
 *	reported on stdout ("ID: deleted"), each that cannot be on stderr
 *	with the reason; the exit status is 1 if any could not, 64 on a
 *	usage error, else 0. A message that is not in the queue (never was,
 *	or is gone since ALL listed it: another delete, the daemon) is
 *	reported on stdout as "ID: not in the queue" and is not a failure,
 *	so that two of these commands may race, as postsuper's may.
 */

#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum action {
    ACT_DELETE,
    ACT_HOLD,
    ACT_RELEASE,
    ACT_REQUEUE,
};

static const char *const action_name[] = {"delete", "hold", "release",
                                          "requeue"};

/*
 * A message that is not there (any more: another command, or the daemon,
 * removed it since it was listed) is nothing to do, not a failure.
 */
static int act_gone(const char *id)
{
    printf("%s: not in the queue\n", id);
    return 1;
}

/* 0 changed, 1 nothing to do (said why), -1 failed (said why). */
static int act_one(struct spool *sp, enum action act, const char *id)
{
    struct spool_change ch = {0};
    struct spool_msg *m;
    char why[512];
    const char *done = NULL;

    if (act == ACT_DELETE) {
        if (spool_delete(sp, id, why, sizeof(why)) < 0)
            goto fail;
        printf("%s: deleted\n", id);
        return 0;
    }
    if (spool_get(sp, id, &m, 0, why, sizeof(why)) < 0)
        goto fail;
    ch.has_state = 1;
    switch (act) {
    case ACT_HOLD:
        if (m->state == SPOOL_HOLD) {
            printf("%s: already on hold\n", id);
            spool_msg_free(m);
            return 1;
        }
        ch.state = SPOOL_HOLD;
        done = "on hold";
        break;
    case ACT_RELEASE:
        if (m->state != SPOOL_HOLD) {
            printf("%s: not on hold\n", id);
            spool_msg_free(m);
            return 1;
        }
        /* An active message put on hold is not active any more. */
        ch.state =
            m->held_from == SPOOL_DEFERRED ? SPOOL_DEFERRED : SPOOL_INCOMING;
        done = "released";
        break;
    default: /* ACT_REQUEUE */
        if (m->state == SPOOL_HOLD || m->state == SPOOL_CORRUPT) {
            fprintf(stderr, "sluice: requeue: %s: %s\n", id,
                    m->state == SPOOL_HOLD ? "on hold; release it first"
                                           : "corrupt; cannot be requeued");
            spool_msg_free(m);
            return -1;
        }
        if (m->state != SPOOL_DEFERRED) {
            printf("%s: already due\n", id);
            spool_msg_free(m);
            return 1;
        }
        ch.state = SPOOL_DEFERRED;
        ch.has_next_attempt = 1;
        ch.next_attempt = spool_now();
        done = "due now";
        break;
    }
    spool_msg_free(m);
    if (spool_update(sp, id, &ch, why, sizeof(why)) < 0)
        goto fail;
    printf("%s: %s\n", id, done);
    return 0;
fail:
    if (errno == ENOENT)
        return act_gone(id);
    fprintf(stderr, "sluice: %s: %s\n", action_name[act], why);
    return -1;
}

struct id_list {
    char (*ids)[SPOOL_ID_MAX + 1];
    size_t n, cap;
};

static int collect(void *ctx, const struct spool_msg *m)
{
    struct id_list *l = ctx;

    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->ids = xrealloc(l->ids, l->cap * sizeof(*l->ids));
    }
    memcpy(l->ids[l->n++], m->id, sizeof(l->ids[0]));
    return 0;
}

/* A queue id as given, without mailq's mark or surrounding blanks. */
static char *id_clean(char *id)
{
    size_t n;

    id += strspn(id, " \t");
    n = strcspn(id, " \t\r\n");
    while (n > 0 && strchr("*!#", id[n - 1]) != NULL)
        n--;
    id[n] = 0;
    return id;
}

/* The ids on standard input, one per line; blank lines are skipped. */
static int act_stdin(struct spool *sp, enum action act)
{
    char line[256];
    int failed = 0;

    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *id;

        if (strchr(line, '\n') == NULL && !feof(stdin)) {
            fprintf(stderr,
                    "sluice: %s: a line of standard input is too "
                    "long for a queue id\n",
                    action_name[act]);
            return -1;
        }
        if (*(id = id_clean(line)) != 0 && act_one(sp, act, id) < 0)
            failed = 1;
    }
    if (ferror(stdin)) {
        fprintf(stderr, "sluice: %s: standard input: %s\n", action_name[act],
                strerror(errno));
        failed = 1;
    }
    return failed ? -1 : 0;
}

static int manage(const struct cli *cli, enum action act, int argc, char **argv)
{
    struct spool *sp;
    struct conf *conf;
    struct id_list all = {0};
    int failed = 0, all_ids = 0;
    char why[512];

    if (argc < 2 || (argc > 2 && (strcmp(argv[1], "ALL") == 0 ||
                                  strcmp(argv[1], "-") == 0))) {
        fprintf(stderr, "usage: sluice %s ID...|ALL|-\n", action_name[act]);
        return CLI_EXIT_USAGE;
    }
    all_ids = strcmp(argv[1], "ALL") == 0;
    if ((conf = cli_spool_open(cli, action_name[act], SPOOL_NO_COMMITTER,
                               &sp)) == NULL)
        return CLI_EXIT_FAIL;
    conf_free(conf);
    if (all_ids) {
        /* Collect first: changing while listing would see moves twice. */
        if (spool_list(sp, SPOOL_INDEX_ALL, collect, &all, why, sizeof(why)) <
            0) {
            fprintf(stderr, "sluice: %s: %s\n", action_name[act], why);
            failed = 1;
        }
        for (size_t i = 0; i < all.n; i++)
            if (act_one(sp, act, all.ids[i]) < 0)
                failed = 1;
        free(all.ids);
    } else if (strcmp(argv[1], "-") == 0) {
        failed = act_stdin(sp, act) < 0;
    } else {
        for (int i = 1; i < argc; i++)
            if (act_one(sp, act, id_clean(argv[i])) < 0)
                failed = 1;
    }
    spool_close(sp);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int delete_run(const struct cli *cli, int argc, char **argv)
{
    return manage(cli, ACT_DELETE, argc, argv);
}

static int hold_run(const struct cli *cli, int argc, char **argv)
{
    return manage(cli, ACT_HOLD, argc, argv);
}

static int release_run(const struct cli *cli, int argc, char **argv)
{
    return manage(cli, ACT_RELEASE, argc, argv);
}

static int requeue_run(const struct cli *cli, int argc, char **argv)
{
    return manage(cli, ACT_REQUEUE, argc, argv);
}

static int recover_run(const struct cli *cli, int argc, char **argv)
{
    struct spool_recovery rec;
    struct spool *sp;
    struct conf *conf;
    char why[512];
    int rc;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: sluice recover\n");
        return CLI_EXIT_USAGE;
    }
    if ((conf = cli_spool_open(cli, "recover", SPOOL_NO_COMMITTER, &sp)) ==
        NULL)
        return CLI_EXIT_FAIL;
    conf_free(conf);
    rc = spool_recover(sp, &rec, why, sizeof(why));
    if (rc < 0)
        fprintf(stderr, "sluice: recover: %s\n", why);
    else
        printf("active to incoming %ld, corrupt %ld\n", rec.active_to_incoming,
               rec.corrupt);
    spool_close(sp);
    return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

CLI_COMMAND(cli_recover_command, "recover", "",
            "start-up recovery of the spool (active mail, corrupt records)",
            recover_run);

CLI_COMMAND(cli_delete_command, "delete", "ID...|ALL|-",
            "remove messages from the queue", delete_run);

CLI_COMMAND(cli_hold_command, "hold", "ID...|ALL|-",
            "keep messages from being delivered", hold_run);

CLI_COMMAND(cli_release_command, "release", "ID...|ALL|-", "undo hold",
            release_run);

CLI_COMMAND(cli_requeue_command, "requeue", "ID...|ALL|-",
            "make deferred messages due now", requeue_run);
