/*
 * NAME
 *	blob 3 - bytes shared by reference count: one copy of a message body
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	struct util_blob *util_blob_adopt(char *data, size_t len)
 *	struct util_blob *util_blob_copy(const char *data, size_t len)
 *	struct util_blob *util_blob_ref(struct util_blob *b)
 *	void	util_blob_unref(struct util_blob *b)
 *	const char *util_blob_data(const struct util_blob *b)
 *	size_t	util_blob_len(const struct util_blob *b)
 * DESCRIPTION
 *	A blob is len bytes that several owners read and none changes: a
 *	message body that the queue manager loaded once and that every
 *	delivery of that message sends, without a copy per delivery. Each
 *	owner holds a reference; the last util_blob_unref() frees it.
 *
 *	util_blob_adopt() takes over data (from malloc(), len bytes, freed
 *	with the blob); util_blob_copy() copies len bytes and adds a
 *	terminating NUL after them. Both return a blob with one reference,
 *	never NULL. util_blob_ref() adds a reference and returns b;
 *	util_blob_unref() drops one (NULL is fine). The count is atomic, so
 *	that references may be dropped on another thread than the one that
 *	took them; the bytes themselves are never written after creation.
 */

#include "util/util.h"

#include <stdlib.h>
#include <string.h>

struct util_blob {
    long refs;
    size_t len;
    char *data;
};

struct util_blob *util_blob_adopt(char *data, size_t len)
{
    struct util_blob *b = xmalloc(sizeof(*b));

    b->refs = 1;
    b->len = len;
    b->data = data;
    return b;
}

struct util_blob *util_blob_copy(const char *data, size_t len)
{
    char *copy = xmalloc(len + 1);

    memcpy(copy, data, len);
    copy[len] = 0;
    return util_blob_adopt(copy, len);
}

struct util_blob *util_blob_ref(struct util_blob *b)
{
    __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
    return b;
}

void util_blob_unref(struct util_blob *b)
{
    if (b == NULL)
        return;
    if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    free(b->data);
    free(b);
}

const char *util_blob_data(const struct util_blob *b)
{
    return b->data;
}

size_t util_blob_len(const struct util_blob *b)
{
    return b->len;
}
