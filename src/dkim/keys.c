/*
 * NAME
 *	keys 3 - a DKIM private key from its PEM file
 * SYNOPSIS
 *	#include "dkim/dkim_impl.h"
 *
 *	EVP_PKEY *dkim_key_read(const char *path, enum dkim_alg *alg,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	dkim_key_read() reads the private key in the PEM file at path and
 *	sets *alg to what it signs with: an RSA key ("BEGIN PRIVATE KEY"
 *	PKCS#8 as openssl genpkey writes it, or "BEGIN RSA PRIVATE KEY" as
 *	opendkim-genkey does) signs rsa-sha256, an Ed25519 key (PKCS#8, as
 *	"openssl genpkey -algorithm ed25519" writes it) ed25519-sha256
 *	(RFC 8463). An RSA key shorter than DKIM_RSA_BITS_MIN bits is
 *	refused: RFC 8301 3.2 says verifiers must not accept signatures
 *	made with one, so mail signed with it would fare worse than mail
 *	not signed at all. An encrypted key is refused (no passphrase is
 *	asked for), as is any other kind of key, and a file that is not a
 *	regular file (a FIFO would block, /dev/zero never ends) or is
 *	larger than any key file. It returns the key, or
 *	NULL with the reason ("PATH: ...").
 */

#include "dkim/dkim_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DKIM_KEY_FILE_MAX (1024 * 1024) /* far beyond any PEM key */

/* No passphrase: an encrypted key is refused, never waited on. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static EVP_PKEY *refuse(EVP_PKEY *pkey, char *why, size_t whylen,
                        const char *path, const char *what)
{
    snprintf(why, whylen, "%s: %s", path, what);
    EVP_PKEY_free(pkey);
    return NULL;
}

EVP_PKEY *dkim_key_read(const char *path, enum dkim_alg *alg, char *why,
                        size_t whylen)
{
    char problem[256];
    EVP_PKEY *pkey;
    struct stat st;
    FILE *f;
    int fd;

    if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
        fstat(fd, &st) < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > DKIM_KEY_FILE_MAX ||
        (f = fdopen(fd, "r")) == NULL) {
        close(fd);
        return refuse(NULL, why, whylen, path,
                      S_ISREG(st.st_mode) ? "too large for a key file"
                                          : "not a regular file");
    }
    ERR_clear_error();
    pkey = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
    fclose(f);
    if (pkey == NULL) {
        snprintf(problem, sizeof(problem),
                 "no PEM private key (unencrypted) in it: %s",
                 ERR_reason_error_string(ERR_peek_last_error())
                     ? ERR_reason_error_string(ERR_peek_last_error())
                     : "unknown error");
        ERR_clear_error();
        return refuse(NULL, why, whylen, path, problem);
    }
    if (EVP_PKEY_is_a(pkey, "ED25519")) {
        *alg = DKIM_ED25519_SHA256;
        return pkey;
    }
    if (!EVP_PKEY_is_a(pkey, "RSA"))
        return refuse(pkey, why, whylen, path,
                      "not an RSA or Ed25519 key (DKIM signs with those)");
    if (EVP_PKEY_get_bits(pkey) < DKIM_RSA_BITS_MIN) {
        snprintf(problem, sizeof(problem),
                 "RSA key of %d bits, fewer than %d (RFC 8301)",
                 EVP_PKEY_get_bits(pkey), DKIM_RSA_BITS_MIN);
        return refuse(pkey, why, whylen, path, problem);
    }
    *alg = DKIM_RSA_SHA256;
    return pkey;
}
