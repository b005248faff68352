#ifndef SLUICE_TLSRPT_IMPL_H
#define SLUICE_TLSRPT_IMPL_H

/*
 * NAME
 *	tlsrpt_impl 3h - what the TLS reporting layer's own files share
 * SYNOPSIS
 *	#include "tlsrpt/tlsrpt_impl.h"
 * DESCRIPTION
 *	The table's bodies (table.c counts, report.c reads them):
 *
 *	table.c		one period's counts, their line form, dirty domains
 *	report.c	the JSON report of one policy domain
 *	txt.c		the _smtp._tls TXT record
 *	mail.c		gzip, base64 and the report message
 */

#include "tlsrpt/tlsrpt.h"

struct tlsrpt_detail {
    enum tlsrpt_result result;
    char *mx_host, *ip, *reason, *sending_ip;
    long count;
};

struct tlsrpt_entry {
    enum tlsrpt_policy_type type;
    char *domain, *string, *mx;
    long success, failure;
    int dirty;
    struct tlsrpt_detail *details;
    size_t ndetails;
    struct tlsrpt_entry *hnext;
};

struct tlsrpt_table {
    size_t max;
    size_t nnone; /* entries of no-policy-found, at most max / 2 */
    struct tlsrpt_entry **entries; /* in the order first counted */
    size_t n;
    struct tlsrpt_entry **hash;
    size_t hsize;
    long dropped;
};

#endif
