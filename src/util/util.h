#ifndef SLUICE_UTIL_H
#define SLUICE_UTIL_H

/*
 * NAME
 *	util 3h - what every layer shares
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_host_name(char *buf, size_t len)
 *	const char *util_list_next(const char **cursor, size_t *len)
 *	int	util_list_has(const char *list, const char *word)
 *
 *	void	*xmalloc(size_t size), *xcalloc(size_t n, size_t size)
 *	void	*xrealloc(void *ptr, size_t size)
 *	char	*xstrdup(const char *s), *xstrndup(const char *s, size_t n)
 *
 *	void	util_panic(const char *fmt, ...)
 *	void	util_vpanic(const char *prefix, const char *fmt, va_list ap)
 *	void	util_panic_hook_set(util_panic_hook_fn *hook)
 *
 *	struct util_buf b = UTIL_BUF_INIT;
 *
 *	void	util_json_string(struct util_buf *b, const char *s)
 *	struct util_json *util_json_parse(const char *text, size_t len,
 *			char *why, size_t whylen)
 *	void	util_json_free(struct util_json *v)
 *	const struct util_json *util_json_get(const struct util_json *v,
 *			const char *name)
 *	void	util_base64_encode(struct util_buf *b, const void *p,
 *			size_t n, size_t width)
 *	ssize_t	util_base64_decode(unsigned char *out, size_t outlen,
 *			const char *s, size_t n, int flags)
 *	void	util_buf_add(struct util_buf *b, const void *p, size_t n)
 *	void	util_buf_puts(struct util_buf *b, const char *s)
 *	void	util_buf_printf(struct util_buf *b, const char *fmt, ...)
 *	void	util_buf_reset(struct util_buf *b)
 *	char	*util_buf_take(struct util_buf *b)
 *	void	util_buf_free(struct util_buf *b)
 *
 *	void	util_quote(char *buf, size_t len, const char *text,
 *			size_t tlen, int flags)
 *
 *	int64_t	util_clock_mono_ms(void), util_clock_mono_us(void)
 *	int64_t	util_clock_wall_us(void)
 *
 *	int	util_write_all(int fd, const void *p, size_t n)
 *	ssize_t	util_read_all(int fd, void *p, size_t n)
 *	int	util_pwrite_all(int fd, const void *p, size_t n, off_t off)
 *	ssize_t	util_pread_all(int fd, void *p, size_t n, off_t off)
 *
 *	int	util_socket_address(struct sockaddr_un *sun,
 *			const char *queue_directory, const char *name,
 *			char *why, size_t whylen)
 *	int	util_socket_listen(const char *queue_directory,
 *			const char *name, int type, mode_t mode,
 *			const char *what, char *why, size_t whylen)
 *
 *	struct util_blob *util_blob_adopt(char *data, size_t len)
 *	struct util_blob *util_blob_copy(const char *data, size_t len)
 *	struct util_blob *util_blob_ref(struct util_blob *b)
 *	void	util_blob_unref(struct util_blob *b)
 *	const char *util_blob_data(const struct util_blob *b)
 *	size_t	util_blob_len(const struct util_blob *b)
 *
 *	int	util_table_path(const char *param, const char *value,
 *			char **path, char *why, size_t whylen)
 *	int	util_table_read(const char *path, util_table_line_fn *fn,
 *			void *ctx, char *why, size_t whylen)
 * DESCRIPTION
 *	util/ sits below every other layer and uses libc only. This header
 *	is its whole public face.
 *
 *	SLUICE_VERSION is the version of every program, in one place.
 *
 *	The allocators (alloc.c) never return NULL: out of memory they
 *	panic. util_panic() (panic.c) reports a bug or an exhausted
 *	resource through the hook the daemon sets, then aborts;
 *	util_vpanic() lets a layer's own panic keep its stderr prefix.
 *
 *	struct util_buf (buf.c) is the one growing buffer: b->data holds
 *	b->len bytes and a NUL after them (NULL until something is added),
 *	for binary records and strings alike.
 *
 *	util_json_string() (json.c) writes text as a JSON string, escaped,
 *	with bytes that are not UTF-8 as U+FFFD: always valid JSON.
 *	util_json_parse() reads JSON text strictly into a tree (struct
 *	util_json), util_json_get() finds an object's member,
 *	util_json_free() frees the tree.
 *
 *	util_base64_encode() and util_base64_decode() (base64.c) speak
 *	RFC 4648 base64: the encoder in one run or in CRLF lines of a
 *	width, the decoder strict (alphabet, padding, length), skipping
 *	white space only with UTIL_BASE64_SPACE.
 *
 *	util_quote() (quote.c) writes text in double quotes for an error
 *	message, escaping what is not printable and cutting long text
 *	short with "..."; UTIL_QUOTE_8BIT shows bytes from 0x80 up as they
 *	are.
 *
 *	The clocks (clock.c): util_clock_mono_ms() and _us() read the
 *	monotonic clock, for intervals and for the time given to core/;
 *	util_clock_wall_us() reads the wall clock (microseconds since the
 *	epoch), for timestamps on disk and in logs.
 *
 *	util_write_all() and util_read_all() (io.c) move all n bytes
 *	through a blocking descriptor (reading stops early only at the end
 *	of the file), retrying after EINTR and short counts;
 *	util_pwrite_all() and util_pread_all() do the same at an offset.
 *
 *	util_socket_address() and util_socket_listen() (socket.c) name and
 *	make the daemon's Unix sockets under its queue directory, the same
 *	way for the daemon and its clients.
 *
 *	A blob (blob.c) is bytes that several owners read, freed with the
 *	last reference: one copy of a message body for all its deliveries.
 *
 *	util_table_path() and util_table_read() (table.c) read a lookup
 *	table file in Postfix's text syntax (comments, continuation lines)
 *	and hand each logical line to the caller, with messages that name
 *	the file and the line; util_table_sort() and util_table_find()
 *	keep such a table in memory, sorted, duplicate keys refused.
 *
 *	util_list_next() (list.c) walks the words of a list parameter
 *	(separated by commas and white space); util_list_has() says
 *	whether a word is one of them, ignoring case.
 *
 *	util_host_name() writes this system's host name into buf, as
 *	Postfix finds the default of myhostname: gethostname(), and when
 *	that name has no dot, the canonical name getaddrinfo() gives for
 *	it, if that one has a dot. It returns 1 when the name written is
 *	fully qualified (has a dot), 0 when it is not (the caller should
 *	warn), and writes "localhost" (returning 0) when the system has no
 *	usable name. The result is computed once per process and then
 *	remembered: the canonical lookup may consult DNS.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.2.0"
#endif

int util_host_name(char *buf, size_t len);
const char *util_list_next(const char **cursor, size_t *len);
int util_list_has(const char *list, const char *word);

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

typedef void util_panic_hook_fn(const char *message);

void util_panic(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;
void util_vpanic(const char *prefix, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0), noreturn))
#endif
    ;
void util_panic_hook_set(util_panic_hook_fn *hook);

struct util_buf {
    char *data; /* len bytes and a NUL; NULL until something is added */
    size_t len;
    size_t size;
};

#define UTIL_BUF_INIT                                                          \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

void util_buf_add(struct util_buf *b, const void *p, size_t n);
void util_buf_puts(struct util_buf *b, const char *s);
void util_buf_printf(struct util_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void util_buf_reset(struct util_buf *b);
char *util_buf_take(struct util_buf *b);
void util_buf_free(struct util_buf *b);

#define UTIL_QUOTE_MAX  64 /* bytes of text a quote shows at most */
#define UTIL_QUOTE_8BIT 1  /* show bytes from 0x80 up as they are */

void util_json_string(struct util_buf *b, const char *s);

enum util_json_type {
    UTIL_JSON_NULL,
    UTIL_JSON_BOOL,
    UTIL_JSON_NUMBER,
    UTIL_JSON_STRING,
    UTIL_JSON_ARRAY,
    UTIL_JSON_OBJECT,
};

#define UTIL_JSON_DEPTH_MAX 32

struct util_json {
    enum util_json_type type;
    int boolean;
    double number;
    char *string;  /* NUL-terminated, UTF-8 */
    size_t length; /* of string */
    size_t count;  /* items (and names, for an object) */
    struct util_json **items;
    char **names;
};

struct util_json *util_json_parse(const char *text, size_t len, char *why,
                                  size_t whylen);
void util_json_free(struct util_json *v);
const struct util_json *util_json_get(const struct util_json *v,
                                      const char *name);

void util_base64_encode(struct util_buf *b, const void *p, size_t n,
                        size_t width);

#define UTIL_BASE64_SPACE 1
/* The most bytes n characters of base64 decode to. */
#define UTIL_BASE64_DECODED_MAX(n) ((n) / 4 * 3 + 3)
ssize_t util_base64_decode(unsigned char *out, size_t outlen, const char *s,
                           size_t n, int flags);

void util_quote(char *buf, size_t len, const char *text, size_t tlen,
                int flags);

int64_t util_clock_mono_ms(void);
int64_t util_clock_mono_us(void);
int64_t util_clock_wall_us(void);

int util_write_all(int fd, const void *p, size_t n);
ssize_t util_read_all(int fd, void *p, size_t n);
int util_pwrite_all(int fd, const void *p, size_t n, off_t off);
ssize_t util_pread_all(int fd, void *p, size_t n, off_t off);

struct sockaddr_un;

int util_socket_address(struct sockaddr_un *sun, const char *queue_directory,
                        const char *name, char *why, size_t whylen);
int util_socket_listen(const char *queue_directory, const char *name, int type,
                       mode_t mode, const char *what, char *why, size_t whylen);

/* Longest logical line of a table file: beyond any real entry, short
 * of hostile. */
#define UTIL_TABLE_LINE_MAX (64 * 1024)

typedef int util_table_line_fn(void *ctx, int line, const char *text, char *why,
                               size_t whylen);

int util_table_path(const char *param, const char *value, char **path,
                    char *why, size_t whylen);
int util_table_read(const char *path, util_table_line_fn *fn, void *ctx,
                    char *why, size_t whylen);

/* What every entry of a table in memory begins with. */
struct util_table_key {
    char *key;
    int line; /* in the file */
};

int util_table_sort(void *entries, size_t count, size_t size, const char *path,
                    char *why, size_t whylen);
void *util_table_find(const void *entries, size_t count, size_t size,
                      const char *key);

struct util_blob;

struct util_blob *util_blob_adopt(char *data, size_t len);
struct util_blob *util_blob_copy(const char *data, size_t len);
struct util_blob *util_blob_ref(struct util_blob *b);
void util_blob_unref(struct util_blob *b);
const char *util_blob_data(const struct util_blob *b);
size_t util_blob_len(const struct util_blob *b);

#endif
