/*
 * NAME
 *	params 3 - the table of sluice parameters
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	extern const struct conf_def conf_params[];
 *	extern const size_t conf_param_count;
 * DESCRIPTION
 *	conf_params[] is every parameter sluice knows, with its type, its
 *	default (as text, exactly as a user would write it), its bounds
 *	or default time unit, and, for parameters that one transport may
 *	override, the suffix of the <transport><suffix> override name.
 *
 *	Names and defaults are those of the Postfix queue manager, so that
 *	a tuned Postfix scheduler configuration carries over; see
 *	doc/sluice.conf.5 for the meaning of each parameter. The rule for
 *	suffixes is Postfix's: default_X is overridden by <transport>_X,
 *	a few parameters without the default_ prefix
 *	(initial_destination_concurrency, concurrency_feedback_rounding)
 *	are overridden by <transport>_<name>, and the SMTP client's smtp_X
 *	(timeouts, MX limits, connection reuse, smtp_helo_name) by
 *	<transport>_X, so that smtp_X is both the global value and that of
 *	transport smtp. No suffix may end another one in a way that makes
 *	an existing name change meaning: test_conf.c checks the pairs.
 *
 *	Keep the table sorted by subject, not by name: "sluice config"
 *	sorts its output itself.
 */

#include "conf/conf.h"

#include <limits.h>

/*
 * Bounds. They keep values in the range where the scheduler's
 * arithmetic (window sizes, slot counts, recipient pools multiplied by
 * small factors) cannot overflow, and far beyond any sane setting.
 */
#define MAX_CONCURRENCY 100000L
#define MAX_RECIPIENTS  10000000L
#define MAX_SLOTS       10000L

/* An integer parameter with bounds. */
#define INT(name, def, sfx, lo, hi, sum)                                       \
    {                                                                          \
        name, CONF_INT, def, sfx, lo, hi, 0, NULL, sum                         \
    }
/* A time parameter with its default unit. */
#define TIME(name, def, sfx, unit, sum)                                        \
    {                                                                          \
        name, CONF_TIME, def, sfx, 0, 0, unit, NULL, sum                       \
    }
#define BOOL(name, def, sfx, sum)                                              \
    {                                                                          \
        name, CONF_BOOL, def, sfx, 0, 0, 0, NULL, sum                          \
    }
#define FEEDBACK(name, def, sfx, sum)                                          \
    {                                                                          \
        name, CONF_FEEDBACK, def, sfx, 0, 0, 0, NULL, sum                      \
    }
#define CHOICE(name, def, sfx, choices, sum)                                   \
    {                                                                          \
        name, CONF_CHOICE, def, sfx, 0, 0, 0, choices, sum                     \
    }
#define STRING(name, def, sfx, sum)                                            \
    {                                                                          \
        name, CONF_STRING, def, sfx, 0, 0, 0, NULL, sum                        \
    }
#define LIST(name, def, sfx, sum)                                              \
    {                                                                          \
        name, CONF_LIST, def, sfx, 0, 0, 0, NULL, sum                          \
    }

const struct conf_def conf_params[] = {
    /* Concurrency scheduling: windows, feedback, dead destinations. */
    INT("initial_destination_concurrency", "5",
        "_initial_destination_concurrency", 1, MAX_CONCURRENCY,
        "starting concurrency window of a new destination queue"),
    INT("default_destination_concurrency_limit", "20",
        "_destination_concurrency_limit", 0, MAX_CONCURRENCY,
        "maximal concurrency window of a destination (0 = no limit)"),
    INT("default_destination_recipient_limit", "50",
        "_destination_recipient_limit", 1, MAX_RECIPIENTS,
        "recipients per delivery request; 1 makes queues per recipient"),
    FEEDBACK("default_destination_concurrency_positive_feedback", "1",
             "_destination_concurrency_positive_feedback",
             "window growth per delivery without a connection failure"),
    FEEDBACK("default_destination_concurrency_negative_feedback", "1",
             "_destination_concurrency_negative_feedback",
             "window shrinkage per connection or handshake failure"),
    INT("default_destination_concurrency_failed_cohort_limit", "1",
        "_destination_concurrency_failed_cohort_limit", 0, MAX_CONCURRENCY,
        "failed pseudo-cohorts before a destination is dead (0 = never)"),
    CHOICE("concurrency_feedback_rounding", "seed",
           "_concurrency_feedback_rounding", "seed|postfix3",
           "window step rounding: the seed's pseudocode or Postfix 3.x"),
    BOOL("destination_concurrency_feedback_debug", "no", NULL,
         "log every change of a destination's concurrency window"),
    TIME("default_destination_rate_delay", "0s", "_destination_rate_delay", 's',
         "pause between deliveries to one destination (0 = none)"),
    TIME("default_transport_rate_delay", "0s", "_transport_rate_delay", 's',
         "pause between deliveries on one transport (0 = none)"),

    /* Preemptive job scheduling. */
    CHOICE("default_scheduler", "preemptive", "_scheduler",
           "preemptive|round_robin",
           "job selection: preemptive (nqmgr) or round_robin (oqmgr)"),
    INT("default_delivery_slot_cost", "5", "_delivery_slot_cost", 0, MAX_SLOTS,
        "selections per delivery slot earned; below 2 disables preemption"),
    INT("default_delivery_slot_loan", "3", "_delivery_slot_loan", 0, MAX_SLOTS,
        "delivery slots lent in advance to a preempting job"),
    INT("default_delivery_slot_discount", "50", "_delivery_slot_discount", 0,
        100, "percent of the required slots that must be accumulated"),
    INT("default_minimum_delivery_slots", "3", "_minimum_delivery_slots", 0,
        MAX_SLOTS, "no preemption of jobs that can never earn this many slots"),

    /* Recipients in core. */
    INT("default_recipient_limit", "20000", "_recipient_limit", 1,
        MAX_RECIPIENTS, "in-core recipient pool of a transport"),
    INT("default_extra_recipient_limit", "1000", "_extra_recipient_limit", 0,
        MAX_RECIPIENTS, "extra recipient pool for unread jobs that preempt"),
    INT("default_recipient_refill_limit", "100", "_recipient_refill_limit", 1,
        MAX_RECIPIENTS, "read more recipients when this many slots are free"),
    TIME("default_recipient_refill_delay", "5s", "_recipient_refill_delay", 's',
         "read more recipients when any slot is free this long"),
    INT("qmgr_message_active_limit", "20000", NULL, 1, MAX_RECIPIENTS,
        "messages in core"),
    INT("qmgr_message_recipient_limit", "20000", NULL, 1, MAX_RECIPIENTS,
        "recipients in core (at least qmgr_message_active_limit)"),
    INT("qmgr_message_recipient_minimum", "10", NULL, 1, MAX_RECIPIENTS,
        "recipients read from a new message no matter what"),

    /* Transports and delivery processes. */
    INT("default_process_limit", "100", "_process_limit", 1, MAX_CONCURRENCY,
        "concurrent deliveries per transport"),
    TIME("transport_retry_time", "60s", NULL, 's',
         "how long a failed transport stays unusable"),

    /* Queue life cycle. */
    TIME("minimal_backoff_time", "300s", NULL, 's',
         "shortest retry delay; also how long a dead destination stays dead"),
    TIME("maximal_backoff_time", "4000s", NULL, 's', "longest retry delay"),
    TIME("queue_run_delay", "300s", NULL, 's',
         "interval between scans of the deferred queue"),
    TIME("maximal_queue_lifetime", "5d", NULL, 'd',
         "age at which undeliverable mail is returned"),
    TIME("bounce_queue_lifetime", "5d", NULL, 'd',
         "age at which an undeliverable bounce (null sender) is dropped"),
    TIME("delay_warning_time", "0h", NULL, 'h',
         "age at which a delay notice is sent (0 = never)"),
    INT("bounce_size_limit", "50000", NULL, 0, LONG_MAX,
        "largest message returned whole in a failure notice, in bytes; a "
        "larger one is returned as its headers (0 = no limit)"),
    TIME("in_flow_delay", "1s", NULL, 's',
         "pause before each new SMTP message while the incoming queue "
         "holds more than qmgr_message_active_limit (0 = none)"),

    /* Routing: transports, the transport table, the relay host. */
    LIST("transports",
         "smtp:smtp, relay:smtp, lmtp:lmtp, discard:discard, "
         "error:error",
         NULL, "declared transports as NAME:TYPE (smtp, lmtp, discard, error)"),
    STRING("default_transport", "smtp", NULL,
           "transport for mail that the transport table does not route"),
    STRING("relayhost", "", NULL,
           "next hop of the default transport (empty: the recipient domain)"),
    STRING("transport_maps", "", NULL,
           "transport table file: PATTERN TRANSPORT:NEXTHOP (empty: none)"),

    /* SMTP client. */
    BOOL("smtp_connection_cache_on_demand", "yes",
         "_connection_cache_on_demand",
         "keep connections open for the next delivery to the same destination"),
    TIME("smtp_connection_cache_time_limit", "2s",
         "_connection_cache_time_limit", 's',
         "how long an idle connection is kept for reuse"),
    TIME("smtp_connection_reuse_time_limit", "300s",
         "_connection_reuse_time_limit", 's',
         "how long one connection may be reused"),
    INT("smtp_connection_reuse_count_limit", "0",
        "_connection_reuse_count_limit", 0, 1000000L,
        "how many times one connection may be reused (0 = no limit)"),
    INT("smtp_mx_address_limit", "5", "_mx_address_limit", 0, 1000,
        "addresses tried per delivery (0 = no limit)"),
    INT("smtp_mx_session_limit", "2", "_mx_session_limit", 0, 1000,
        "sessions attempted per delivery (0 = no limit)"),
    TIME("smtp_connect_timeout", "30s", "_connect_timeout", 's',
         "time limit for a TCP connection to be established"),
    TIME("smtp_helo_timeout", "300s", "_helo_timeout", 's',
         "time limit for the greeting and the EHLO/HELO/LHLO reply"),
    TIME("smtp_mail_timeout", "300s", "_mail_timeout", 's',
         "time limit for the reply to MAIL FROM"),
    TIME("smtp_rcpt_timeout", "300s", "_rcpt_timeout", 's',
         "time limit for the reply to RCPT TO"),
    TIME("smtp_data_init_timeout", "120s", "_data_init_timeout", 's',
         "time limit for the reply to DATA"),
    TIME("smtp_data_xfer_timeout", "180s", "_data_xfer_timeout", 's',
         "time limit for sending a piece of the message content"),
    TIME("smtp_data_done_timeout", "600s", "_data_done_timeout", 's',
         "time limit for the reply to the final \".\""),
    TIME("smtp_quit_timeout", "300s", "_quit_timeout", 's',
         "time limit for the reply to QUIT"),
    STRING("smtp_helo_name", "$myhostname", "_helo_name",
           "name sent in EHLO, HELO or LHLO: a domain or address literal"),
    LIST("dns_servers", "", NULL,
         "DNS resolvers as ip, ip:port or [ipv6]:port (empty: the system's)"),

    /* Messages. */
    INT("message_size_limit", "10240000", NULL, 0, LONG_MAX,
        "largest message accepted, in bytes (0 = no limit)"),
    STRING("message_strip_characters", "", NULL,
           "characters removed from SMTP message content (\\0: NULs in "
           "the body)"),

    /* SMTP server. */
    LIST("smtpd_listen", "127.0.0.1:2525", NULL,
         "SMTP server addresses as ip:port or [ipv6]:port (empty: none)"),
    LIST("mynetworks", "127.0.0.0/8, [::1]/128", NULL,
         "clients that may relay mail to any domain"),
    LIST("relay_domains", "", NULL,
         "domains (and their subdomains) any client may send mail to"),
    INT("smtpd_recipient_limit", "1000", NULL, 1, MAX_RECIPIENTS,
        "recipients accepted per message"),
    INT("smtpd_client_connection_count_limit", "50", NULL, 0, 100000L,
        "sessions at once from one client address (0 = no limit)"),
    LIST("smtpd_client_event_limit_exceptions", "$mynetworks", NULL,
         "clients not held to smtpd_client_connection_count_limit"),
    TIME("smtpd_timeout", "300s", NULL, 's',
         "time limit for a client's command line or line of message "
         "content"),
    BOOL("smtpd_per_record_deadline", "yes", NULL,
         "smtpd_timeout bounds each whole command or content line, not each "
         "read"),
    TIME("smtpd_stress_timeout", "10s", NULL, 's',
         "smtpd_timeout while the SMTP server is near its session limit"),
    INT("smtpd_hard_error_limit", "20", NULL, 1, 100000L,
        "errors a client may make before it is disconnected"),
    INT("line_length_limit", "2048", NULL, 512, 131072L,
        "longest SMTP command line accepted, in bytes"),
    BOOL("always_add_missing_headers", "no", NULL,
         "add From:, Date: and Message-ID: to SMTP mail that lacks them"),
    INT("in_flow_backlog_limit", "100000", NULL, 0, MAX_RECIPIENTS,
        "incoming queue length at which new mail is refused (0 = none)"),
    INT("queue_minfree", "0", NULL, 0, LONG_MAX,
        "free bytes the queue file system must keep for new mail"),
    INT("smtpd_junk_command_limit", "100", NULL, 0, 1000000L,
        "NOOP, VRFY, ETRN and RSET commands a client may send between two "
        "messages before each counts as an error"),
    INT("smtpd_memory_limit", "268435456", NULL, 0, 1L << 40,
        "message bytes all SMTP sessions may hold in memory at once (0 = "
        "no limit)"),
    INT("hopcount_limit", "50", NULL, 1, 1000,
        "Received: headers at which SMTP mail is refused as looping"),
    CHOICE("smtpd_forbid_bare_newline", "disconnect", NULL,
           "disconnect|normalize|yes|no|note|reject",
           "a bare line end in DATA: 521 and close, taken as CRLF "
           "(normalize), or refused"),
    LIST("smtpd_forbid_bare_newline_exclusions", "", NULL,
         "clients whose bare LF is taken as CRLF (normalize) whatever "
         "smtpd_forbid_bare_newline says"),
    INT("smtpd_forbid_bare_newline_reject_code", "550", NULL, 500, 599,
        "reply code of smtpd_forbid_bare_newline = reject (521 also "
        "disconnects)"),

    /* The spool. */
    {"queue_directory", CONF_STRING, "/var/spool/sluice", NULL, 0, 0, 0, NULL,
     "where the spool database and the maildrop live"},
    INT("queue_map_size", "268435456", NULL, 1048576L, 1L << 44,
        "initial size of the spool database map, in bytes"),
    INT("queue_map_size_limit", "0", NULL, 0, 1L << 44,
        "largest size the spool map may grow to (0 = up to the disk)"),
    {"myhostname", CONF_STRING, "", NULL, 0, 0, 0, NULL,
     "this host's name (default: the system's fully qualified name, set at "
     "run time)"},
};

const size_t conf_param_count = sizeof(conf_params) / sizeof(conf_params[0]);
