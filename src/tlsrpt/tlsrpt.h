#ifndef SLUICE_TLSRPT_H
#define SLUICE_TLSRPT_H

/*
 * NAME
 *	tlsrpt 3h - SMTP TLS reporting (RFC 8460): counts, reports, records
 * SYNOPSIS
 *	#include "tlsrpt/tlsrpt.h"
 *
 *	struct tlsrpt_table *tlsrpt_table_create(size_t max_policies)
 *	void	tlsrpt_table_free(struct tlsrpt_table *t)
 *	int	tlsrpt_table_count(struct tlsrpt_table *t,
 *			const struct tlsrpt_policy *p,
 *			const struct tlsrpt_failure *f)
 *	long	tlsrpt_table_dropped(const struct tlsrpt_table *t)
 *	size_t	tlsrpt_table_size(const struct tlsrpt_table *t)
 *	int	tlsrpt_table_has_policy(const struct tlsrpt_table *t,
 *			const char *domain)
 *	size_t	tlsrpt_table_domains(const struct tlsrpt_table *t,
 *			char ***domains)
 *	size_t	tlsrpt_table_dirty(struct tlsrpt_table *t, char ***domains)
 *	void	tlsrpt_table_save(const struct tlsrpt_table *t,
 *			const char *domain, struct util_buf *out)
 *	int	tlsrpt_table_load(struct tlsrpt_table *t, const char *text,
 *			size_t len)
 *	void	tlsrpt_table_clear(struct tlsrpt_table *t)
 *	void	tlsrpt_strings_free(char **v, size_t n)
 *
 *	char	*tlsrpt_report_json(const struct tlsrpt_table *t,
 *			const char *domain,
 *			const struct tlsrpt_report_info *info)
 *	const char *tlsrpt_result_name(enum tlsrpt_result r)
 *
 *	int	tlsrpt_txt_parse(const char *txt, struct tlsrpt_rua *out)
 *	int	tlsrpt_txt_select(const char *const *txt, size_t n,
 *			struct tlsrpt_rua *out)
 *
 *	char	*tlsrpt_gzip(const char *data, size_t len, size_t *outlen)
 *	char	*tlsrpt_mail_format(const struct tlsrpt_mail *m,
 *			const char *json, size_t *len)
 * DESCRIPTION
 *	A sending MTA that applies MTA-STS or DANE tells the receiving
 *	domain, once a day, how its TLS sessions went: how many succeeded
 *	and how many failed, and why, per policy (RFC 8460). This layer
 *	counts, writes the JSON report and the report message, and reads
 *	the _smtp._tls TXT record; the queue manager records, schedules,
 *	looks up and sends.
 *
 *	A table holds one reporting period's counts: per policy (policy
 *	domain, type, policy text, mx patterns) the successful and failed
 *	sessions, and per failure (result type, sending address, receiving
 *	MX host, receiving address, reason) a count. tlsrpt_table_create() makes
 *	one that holds at most max_policies policies and TLSRPT_DETAILS_MAX
 *	failure details per policy: memory stays bounded whatever the
 *	traffic. tlsrpt_table_count() counts one session under p, a
 *	success when f is NULL, else a failure with its details; it
 *	returns 0, or -1 when it did not fit (a new policy past the limit:
 *	not counted at all; a new failure detail past the limit: counted
 *	in the summary, not in the details), and tlsrpt_table_dropped()
 *	counts those. Policies of the type no-policy-found (a domain that
 *	publishes neither MTA-STS nor DANE) take at most half of the
 *	table, max_policies / 2: every domain mailed could be one, and
 *	they must not leave the domains that publish a policy without
 *	room. tlsrpt_table_size() is the number of policies;
 *	tlsrpt_table_has_policy() is 1 when domain has counts under an
 *	sts or tlsa policy, 0 when only under no-policy-found or none.
 *
 *	tlsrpt_table_domains() gives the policy domains with counts,
 *	sorted, malloc'd (tlsrpt_strings_free()); tlsrpt_table_dirty()
 *	those counted since its last call, and forgets that they were.
 *	tlsrpt_table_save() writes one domain's counts in a line form that
 *	tlsrpt_table_load() adds back (what the queue manager keeps in the
 *	spool's meta database, so that a restart loses no counts); load
 *	returns 0, or -1 on text it cannot read (nothing is added then).
 *	tlsrpt_table_clear() forgets everything (a new period).
 *
 *	tlsrpt_report_json() writes the report of one policy domain
 *	(section 4): organization-name, date-range (start-datetime and
 *	end-datetime, RFC 3339 in UTC), contact-info, report-id, and a
 *	policies array with, per policy, policy (policy-type,
 *	policy-string, policy-domain, mx-host for sts), summary
 *	(total-successful-session-count, total-failure-session-count) and
 *	failure-details (result-type, sending-mta-ip, receiving-mx-hostname
 *	and receiving-ip when known, failed-session-count,
 *	failure-reason-code); a no-policy-found policy has neither
 *	policy-string nor mx-host. Malloc'd, NUL-ended; NULL when the
 *	domain has no counts.
 *
 *	tlsrpt_txt_parse() reads one TXT record of _smtp._tls.DOMAIN
 *	(section 3): "v=TLSRPTv1" first, then fields separated by ";",
 *	one "rua" of one or more URIs separated by ",", each mailto: or
 *	https:; other fields are ignored when they follow the grammar.
 *	0 with out filled, or -1. A URI of another scheme is skipped; a
 *	record with none left is invalid. tlsrpt_txt_select() applies
 *	the rule to all the records (each given whole): those that do not
 *	begin with "v=TLSRPTv1" are discarded, and unless exactly one is
 *	left and valid, the domain has none (-1).
 *
 *	tlsrpt_gzip() compresses with zlib in the gzip format (RFC 1952);
 *	NULL when zlib fails. tlsrpt_mail_format() writes the report
 *	message of section 5.3 in the spool's form (CRLF line ends): a
 *	multipart/report of report-type "tlsrpt" with a text/plain part
 *	and the report gzip'd and base64-encoded as
 *	application/tlsrpt+gzip, the Subject "Report Domain: DOMAIN
 *	Submitter: ORG Report-ID: <ID>", TLS-Report-Domain and
 *	TLS-Report-Submitter headers, and the file name of section 5.1.
 *	NULL when the gzip fails.
 */

#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

#define TLSRPT_DETAILS_MAX 100 /* failure details per policy */
#define TLSRPT_RUA_MAX     8   /* rua URIs kept per record */

enum tlsrpt_policy_type {
    TLSRPT_POLICY_STS,
    TLSRPT_POLICY_TLSA,
    TLSRPT_POLICY_NONE, /* no-policy-found */
};

/* Result types, section 4.3. */
enum tlsrpt_result {
    TLSRPT_STARTTLS_NOT_SUPPORTED,
    TLSRPT_CERTIFICATE_HOST_MISMATCH,
    TLSRPT_CERTIFICATE_EXPIRED,
    TLSRPT_CERTIFICATE_NOT_TRUSTED,
    TLSRPT_VALIDATION_FAILURE,
    TLSRPT_TLSA_INVALID,
    TLSRPT_DNSSEC_INVALID,
    TLSRPT_DANE_REQUIRED,
    TLSRPT_STS_POLICY_FETCH_ERROR,
    TLSRPT_STS_POLICY_INVALID,
    TLSRPT_STS_WEBPKI_INVALID,
    TLSRPT_RESULT_COUNT
};

/* A policy as counted; strings' lines are separated by "\n". */
struct tlsrpt_policy {
    enum tlsrpt_policy_type type;
    const char *domain; /* the policy domain */
    const char *string; /* policy-string lines, or "" */
    const char *mx;     /* sts: mx-host patterns, or "" */
};

struct tlsrpt_failure {
    enum tlsrpt_result result;
    const char *mx_host;    /* receiving-mx-hostname, or "" */
    const char *ip;         /* receiving-ip, or "" */
    const char *reason;     /* failure-reason-code, or "" */
    const char *sending_ip; /* sending-mta-ip, or "" (NULL: "") */
};

struct tlsrpt_report_info {
    const char *organization; /* organization-name */
    const char *contact;      /* contact-info */
    const char *report_id;
    int64_t start, end; /* seconds since the epoch, end included */
};

struct tlsrpt_rua {
    size_t n;
    char *uri[TLSRPT_RUA_MAX]; /* malloc'd; free with tlsrpt_rua_clear() */
};

struct tlsrpt_mail {
    const char *from;         /* the From: address */
    const char *to;           /* the rua's address */
    const char *domain;       /* the policy domain */
    const char *organization; /* the submitter */
    const char *sender_host;  /* the file name's sender: myhostname */
    const char *report_id;
    const char *date; /* the Date: value (RFC 5322) */
    int64_t start, end;
};

struct tlsrpt_table;

struct tlsrpt_table *tlsrpt_table_create(size_t max_policies);
void tlsrpt_table_free(struct tlsrpt_table *t);
int tlsrpt_table_count(struct tlsrpt_table *t, const struct tlsrpt_policy *p,
                       const struct tlsrpt_failure *f);
long tlsrpt_table_dropped(const struct tlsrpt_table *t);
size_t tlsrpt_table_size(const struct tlsrpt_table *t);
int tlsrpt_table_has_policy(const struct tlsrpt_table *t, const char *domain);
size_t tlsrpt_table_domains(const struct tlsrpt_table *t, char ***domains);
size_t tlsrpt_table_dirty(struct tlsrpt_table *t, char ***domains);
void tlsrpt_table_save(const struct tlsrpt_table *t, const char *domain,
                       struct util_buf *out);
int tlsrpt_table_load(struct tlsrpt_table *t, const char *text, size_t len);
void tlsrpt_table_clear(struct tlsrpt_table *t);
void tlsrpt_strings_free(char **v, size_t n);

char *tlsrpt_report_json(const struct tlsrpt_table *t, const char *domain,
                         const struct tlsrpt_report_info *info);
const char *tlsrpt_result_name(enum tlsrpt_result r);

int tlsrpt_txt_parse(const char *txt, struct tlsrpt_rua *out);
int tlsrpt_txt_select(const char *const *txt, size_t n, struct tlsrpt_rua *out);
void tlsrpt_rua_clear(struct tlsrpt_rua *r);

char *tlsrpt_gzip(const char *data, size_t len, size_t *outlen);
char *tlsrpt_mail_format(const struct tlsrpt_mail *m, const char *json,
                         size_t *len);

#endif
