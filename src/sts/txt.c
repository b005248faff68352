/*
 * NAME
 *	txt 3 - the _mta-sts TXT record
 * SYNOPSIS
 *	#include "sts/sts.h"
 *
 *	int	sts_txt_parse(const char *txt, char id[STS_ID_MAX + 1])
 *	int	sts_txt_select(const char *const *txt, size_t n,
 *			char id[STS_ID_MAX + 1])
 * DESCRIPTION
 *	RFC 8461 section 3.1, the record's grammar:
 *
 *	    sts-text-record = sts-version 1*(sts-field-delim sts-field)
 *	                      [sts-field-delim]
 *	    sts-field       = sts-id / sts-extension
 *	    sts-field-delim = *WSP ";" *WSP
 *	    sts-version     = %s"v=STSv1"
 *	    sts-id          = %s"id=" 1*32(ALPHA / DIGIT)
 *	    sts-ext-name    = (ALPHA / DIGIT)
 *	                      *31(ALPHA / DIGIT / "_" / "-" / ".")
 *	    sts-ext-value   = 1*(%x21-3A / %x3C / %x3E-7E)
 *
 *	sts_txt_parse() reads one record by it: 0 with the id, or -1 when
 *	the record does not follow it, has no id or has two.
 *
 *	sts_txt_select() applies the rule for several records: "records
 *	that do not begin with "v=STSv1;" are discarded. If the number of
 *	resulting records is not one, or if the resulting record is
 *	syntactically invalid, senders MUST assume the recipient domain
 *	does not have an available MTA-STS Policy". "Begins with" is read
 *	as the grammar has it: "v=STSv1" and then a delimiter.
 */

#include "sts/sts_impl.h"

#include <string.h>

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

static int is_wsp(char c)
{
    return c == ' ' || c == '\t';
}

/* After "v=STSv1": a delimiter (white space, then ";") or the end. */
static int begins_with_version(const char *txt)
{
    if (strncmp(txt, "v=STSv1", 7) != 0)
        return 0;
    txt += 7;
    while (is_wsp(*txt))
        txt++;
    return *txt == ';';
}

/* One field [p, end): the id into id (*got counts ids), or an extension. */
static int field_parse(const char *p, const char *end, char *id, int *got)
{
    const char *eq = memchr(p, '=', (size_t)(end - p));
    size_t nlen, vlen;

    if (eq == NULL || eq == p || eq + 1 == end)
        return -1;
    nlen = (size_t)(eq - p);
    vlen = (size_t)(end - eq - 1);
    if (nlen == 2 && memcmp(p, "id", 2) == 0) {
        if (vlen > STS_ID_MAX || ++*got > 1)
            return -1;
        for (size_t i = 0; i < vlen; i++)
            if (!is_alnum(eq[1 + i]))
                return -1;
        memcpy(id, eq + 1, vlen);
        id[vlen] = 0;
        return 0;
    }
    if (nlen > 32 || !is_alnum(p[0]))
        return -1;
    for (size_t i = 1; i < nlen; i++)
        if (!is_alnum(p[i]) && p[i] != '_' && p[i] != '-' && p[i] != '.')
            return -1;
    for (size_t i = 0; i < vlen; i++) {
        unsigned char c = (unsigned char)eq[1 + i];

        if (c < 0x21 || c > 0x7e || c == ';' || c == '=')
            return -1;
    }
    return 0;
}

int sts_txt_parse(const char *txt, char id[STS_ID_MAX + 1])
{
    const char *p;
    int got = 0, fields = 0;

    if (!begins_with_version(txt))
        return -1;
    p = txt + 7;
    for (;;) {
        const char *end;

        while (is_wsp(*p))
            p++;
        if (*p == 0)
            break;
        if (*p++ != ';')
            return -1;
        while (is_wsp(*p))
            p++;
        if (*p == 0) /* the optional delimiter at the end */
            break;
        for (end = p; *end && *end != ';' && !is_wsp(*end); end++)
            ;
        if (field_parse(p, end, id, &got) < 0)
            return -1;
        fields++;
        p = end;
    }
    return fields > 0 && got == 1 ? 0 : -1;
}

int sts_txt_select(const char *const *txt, size_t n, char id[STS_ID_MAX + 1])
{
    const char *one = NULL;

    for (size_t i = 0; i < n; i++) {
        if (!begins_with_version(txt[i]))
            continue;
        if (one != NULL)
            return -1;
        one = txt[i];
    }
    return one != NULL ? sts_txt_parse(one, id) : -1;
}
