/*
 * NAME
 *	txt 3 - the TLS reporting record, _smtp._tls.DOMAIN (RFC 8460, 3)
 * SYNOPSIS
 *	#include "tlsrpt/tlsrpt.h"
 *
 *	int	tlsrpt_txt_parse(const char *txt, struct tlsrpt_rua *out)
 *	int	tlsrpt_txt_select(const char *const *txt, size_t n,
 *			struct tlsrpt_rua *out)
 *	void	tlsrpt_rua_clear(struct tlsrpt_rua *r)
 * DESCRIPTION
 *	The record's grammar (section 3):
 *
 *	    tlsrpt-record    = tlsrpt-version 1*(field-delim tlsrpt-field)
 *	                       [field-delim]
 *	    field-delim      = *WSP ";" *WSP
 *	    tlsrpt-field     = tlsrpt-rua / tlsrpt-extension
 *	    tlsrpt-version   = %s"v=TLSRPTv1"
 *	    tlsrpt-rua       = %s"rua=" tlsrpt-uri *(*WSP "," *WSP tlsrpt-uri)
 *	    tlsrpt-extension = tlsrpt-ext-name "=" tlsrpt-ext-value
 *	    tlsrpt-ext-name  = (ALPHA / DIGIT)
 *	                       *31(ALPHA / DIGIT / "_" / "-" / ".")
 *	    tlsrpt-ext-value = 1*(%x21-3A / %x3C / %x3E-7E)
 *
 *	tlsrpt_txt_parse() reads one record by it: a record without a rua
 *	field, with two, or with a field that breaks the grammar is -1. A
 *	URI is kept when it is "mailto:" with an address (what follows a
 *	"?" is dropped) or "https://" with a host, the scheme in any case;
 *	other schemes are skipped, and a record whose rua names none that
 *	sluice can use is -1. At most TLSRPT_RUA_MAX are kept.
 *
 *	tlsrpt_txt_select(): "records that do not begin with
 *	"v=TLSRPTv1;" are discarded. If the number of resulting records is
 *	not one, senders MUST assume the recipient domain does not
 *	implement TLSRPT." tlsrpt_rua_clear() frees what a parse kept.
 */

#include "tlsrpt/tlsrpt_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VERSION "v=TLSRPTv1"

/* ASCII letters and digits (the daemon keeps the C locale). */
static int is_alnum(char c)
{
    return isalnum((unsigned char)c) != 0;
}

/* WSP: a space or a tab; returns p past any. */
static const char *skip_wsp(const char *p)
{
    return p + strspn(p, " \t");
}

/* "v=TLSRPTv1", then a delimiter. */
static int begins_with_version(const char *txt)
{
    return strncmp(txt, VERSION, strlen(VERSION)) == 0 &&
           *skip_wsp(txt + strlen(VERSION)) == ';';
}

void tlsrpt_rua_clear(struct tlsrpt_rua *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->uri[i]);
    memset(r, 0, sizeof(*r));
}

/* One URI [p, p+len): kept when sluice can send to it. */
static void uri_add(struct tlsrpt_rua *r, const char *p, size_t len)
{
    if (r->n >= TLSRPT_RUA_MAX)
        return;
    if (len > 7 && strncasecmp(p, "mailto:", 7) == 0) {
        size_t n = strcspn(p + 7, "?");
        const char *at;

        if (n > len - 7)
            n = len - 7;
        at = memchr(p + 7, '@', n);
        if (at == NULL || at == p + 7 || at == p + 7 + n - 1)
            return;
        r->uri[r->n] = xstrndup(p, 7 + n);
        memcpy(r->uri[r->n], "mailto:", 7);
        r->n++;
    } else if (len > 8 && strncasecmp(p, "https://", 8) == 0 && p[8] != '/') {
        r->uri[r->n] = xstrndup(p, len);
        memcpy(r->uri[r->n], "https://", 8);
        r->n++;
    }
}

/* The value of rua= [p, end): URIs separated by commas. */
static int rua_parse(struct tlsrpt_rua *r, const char *p, const char *end)
{
    while (p < end) {
        const char *q = p;

        while (q < end && *q != ',' && *q != ' ' && *q != '\t')
            q++;
        if (q == p)
            return -1; /* an empty URI */
        uri_add(r, p, (size_t)(q - p));
        q = skip_wsp(q) < end ? skip_wsp(q) : end;
        if (q < end && *q != ',')
            return -1;
        if (q < end) {
            q = skip_wsp(q + 1) < end ? skip_wsp(q + 1) : end;
            if (q == end)
                return -1; /* a trailing comma */
        }
        p = q;
    }
    return 0;
}

/* An extension field [p, end), checked against the grammar. */
static int extension_ok(const char *p, const char *end)
{
    const char *eq = memchr(p, '=', (size_t)(end - p));

    if (eq == NULL || eq == p || eq - p > 32 || !is_alnum(*p) || eq + 1 == end)
        return 0;
    for (const char *c = p + 1; c < eq; c++)
        if (!is_alnum(*c) && *c != '_' && *c != '-' && *c != '.')
            return 0;
    for (const char *c = eq + 1; c < end; c++)
        if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e || *c == ';' ||
            *c == '=')
            return 0;
    return 1;
}

int tlsrpt_txt_parse(const char *txt, struct tlsrpt_rua *out)
{
    const char *p;
    int ruas = 0, fields = 0;

    memset(out, 0, sizeof(*out));
    if (!begins_with_version(txt))
        return -1;
    p = txt + strlen(VERSION);
    while (*p) {
        const char *end;

        p = skip_wsp(p);
        if (*p != ';')
            goto bad;
        p = skip_wsp(p + 1);
        if (*p == 0)
            break; /* the optional last delimiter */
        end = p + strcspn(p, ";");
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (strncmp(p, "rua=", 4) == 0) {
            if (ruas++ > 0 || rua_parse(out, p + 4, end) < 0)
                goto bad;
        } else if (!extension_ok(p, end)) {
            goto bad;
        }
        fields++;
        p = end;
    }
    if (fields == 0 || ruas != 1 || out->n == 0)
        goto bad;
    return 0;
bad:
    tlsrpt_rua_clear(out);
    return -1;
}

int tlsrpt_txt_select(const char *const *txt, size_t n, struct tlsrpt_rua *out)
{
    const char *found = NULL;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        if (!begins_with_version(txt[i]))
            continue;
        if (found != NULL)
            return -1;
        found = txt[i];
    }
    return found ? tlsrpt_txt_parse(found, out) : -1;
}
