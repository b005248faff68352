/*
 * NAME
 *	fuzz_tlsrpt 1 - libFuzzer target: TLS reporting's TXT record and
 *	the counts read back from the spool
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes, cut at the first NUL, to tlsrpt_txt_parse()
 *	as a _smtp._tls TXT record, and, whole, to tlsrpt_table_load() as
 *	a domain's counts from the meta database (what a corrupt or
 *	hostile spool could hold), under AddressSanitizer and UBSan: a
 *	crash, a leak, an overrun or undefined behaviour is a bug. It
 *	also checks the contract: a record accepted has 1 to
 *	TLSRPT_RUA_MAX URIs, each mailto: with an "@" or https://; counts
 *	loaded are saved in a form that loads again into the same text,
 *	and every domain loaded has a JSON report. The seed corpus is
 *	tests/fuzz/corpus/tlsrpt/.
 */

#include "tlsrpt/tlsrpt.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_txt(const uint8_t *data, size_t size)
{
    char *txt = malloc(size + 1);
    struct tlsrpt_rua r;

    memcpy(txt, data, size);
    txt[size] = 0;
    if (tlsrpt_txt_parse(txt, &r) == 0) {
        if (r.n == 0 || r.n > TLSRPT_RUA_MAX)
            abort();
        for (size_t i = 0; i < r.n; i++)
            if (!(strncmp(r.uri[i], "mailto:", 7) == 0 &&
                  strchr(r.uri[i], '@')) &&
                strncmp(r.uri[i], "https://", 8) != 0)
                abort();
        tlsrpt_rua_clear(&r);
    }
    free(txt);
}

static void check_table(const uint8_t *data, size_t size)
{
    struct tlsrpt_table *t = tlsrpt_table_create(50), *u;
    struct tlsrpt_report_info info = {"org", "postmaster@org", "id", 0, 86399};
    struct util_buf a = UTIL_BUF_INIT, b = UTIL_BUF_INIT;
    char **d;
    size_t n;

    if (tlsrpt_table_load(t, (const char *)data, size) == 0) {
        n = tlsrpt_table_domains(t, &d);
        u = tlsrpt_table_create(50);
        for (size_t i = 0; i < n; i++) {
            char *json = tlsrpt_report_json(t, d[i], &info);

            if (json == NULL)
                abort();
            free(json);
            tlsrpt_table_save(t, d[i], &a);
        }
        if (a.len && tlsrpt_table_load(u, a.data, a.len) != 0)
            abort();
        for (size_t i = 0; i < n; i++)
            tlsrpt_table_save(u, d[i], &b);
        if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0))
            abort();
        tlsrpt_strings_free(d, n);
        tlsrpt_table_free(u);
    }
    util_buf_free(&a);
    util_buf_free(&b);
    tlsrpt_table_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_txt(data, strnlen((const char *)data, size));
    check_table(data, size);
    return 0;
}
