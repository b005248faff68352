/*
 * NAME
 *	mail 3 - the report as a message (RFC 8460, 5.3), gzip'd (5.1)
 * SYNOPSIS
 *	#include "tlsrpt/tlsrpt.h"
 *
 *	char	*tlsrpt_gzip(const char *data, size_t len, size_t *outlen)
 *	char	*tlsrpt_mail_format(const struct tlsrpt_mail *m,
 *			const char *json, size_t *len)
 * DESCRIPTION
 *	Described in tlsrpt.h. Section 5.1: "The report MUST be ...
 *	compressed using gzip"; its file name is "sender "!" policy-domain
 *	"!" begin-timestamp "!" end-timestamp "!" unique-id ".json.gz"",
 *	the timestamps in seconds since the epoch. Section 5.3: the
 *	message is "multipart/report" with report-type "tlsrpt", a
 *	human-readable part, and the report as "application/tlsrpt+gzip";
 *	its Subject is "Report Domain: <policy-domain> Submitter:
 *	<sender> Report-ID: <report-id>", and it carries the
 *	TLS-Report-Domain and TLS-Report-Submitter header fields. The
 *	boundary holds "=_", which base64 and the text part never do.
 */

#include "tlsrpt/tlsrpt_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

char *tlsrpt_gzip(const char *data, size_t len, size_t *outlen)
{
    z_stream z;
    uLong cap;
    char *out;

    memset(&z, 0, sizeof(z));
    /* 15 + 16: the gzip wrapper instead of zlib's */
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    cap = deflateBound(&z, (uLong)len) + 32;
    out = xmalloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
        deflateEnd(&z);
        free(out);
        return NULL;
    }
    *outlen = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

char *tlsrpt_mail_format(const struct tlsrpt_mail *m, const char *json,
                         size_t *len)
{
    struct util_buf b = UTIL_BUF_INIT;
    size_t zlen;
    char *z = tlsrpt_gzip(json, strlen(json), &zlen);
    char boundary[128];

    if (z == NULL)
        return NULL;
    snprintf(boundary, sizeof(boundary), "tlsrpt=_%lld.%zu",
             (long long)m->start, strlen(json));
    util_buf_printf(&b,
                    "From: %s\r\nTo: %s\r\nDate: %s\r\n"
                    "Subject: Report Domain: %s Submitter: %s Report-ID: "
                    "<%s>\r\n"
                    "TLS-Report-Domain: %s\r\nTLS-Report-Submitter: %s\r\n"
                    "Message-ID: <%s>\r\nMIME-Version: 1.0\r\n"
                    "Content-Type: multipart/report; report-type=\"tlsrpt\";"
                    "\r\n\tboundary=\"%s\"\r\n\r\n",
                    m->from, m->to, m->date, m->domain, m->organization,
                    m->report_id, m->domain, m->organization, m->report_id,
                    boundary);
    util_buf_printf(&b,
                    "This is a MIME-encapsulated message.\r\n\r\n--%s\r\n"
                    "Content-Type: text/plain; charset=us-ascii\r\n"
                    "Content-Transfer-Encoding: 7bit\r\n\r\n"
                    "This is an aggregate TLS report (RFC 8460) from %s\r\n"
                    "about the policy domain %s.\r\n\r\n--%s\r\n",
                    boundary, m->organization, m->domain, boundary);
    util_buf_printf(&b,
                    "Content-Type: application/tlsrpt+gzip\r\n"
                    "Content-Transfer-Encoding: base64\r\n"
                    "Content-Disposition: attachment;\r\n"
                    "\tfilename=\"%s!%s!%lld!%lld!%s.json.gz\"\r\n\r\n",
                    m->sender_host, m->domain, (long long)m->start,
                    (long long)m->end, m->report_id);
    util_base64_encode(&b, z, zlen, 76);
    util_buf_printf(&b, "\r\n--%s--\r\n", boundary);
    free(z);
    *len = b.len;
    return util_buf_take(&b);
}
