/*
 * NAME
 *	list 3 - the words of a list parameter
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	const char *util_list_next(const char **cursor, size_t *len)
 *	int	util_list_has(const char *list, const char *word)
 * DESCRIPTION
 *	A list parameter's value is words separated by commas and white
 *	space, as in the reference ("a.example, [10.0.0.1]:25").
 *
 *	util_list_next() returns the next word at *cursor and its length
 *	in *len, and moves *cursor past it; NULL when none is left. The
 *	word is not terminated: it points into the list.
 *
 *	util_list_has() says whether word is one of the list's words,
 *	ignoring case (domain names and next hops).
 */

#include "util/util.h"

#include <string.h>
#include <strings.h>

#define LIST_SEPARATORS ", \t\r\n"

const char *util_list_next(const char **cursor, size_t *len)
{
    const char *p = *cursor + strspn(*cursor, LIST_SEPARATORS);

    if (*p == 0) {
        *cursor = p;
        return NULL;
    }
    *len = strcspn(p, LIST_SEPARATORS);
    *cursor = p + *len;
    return p;
}

int util_list_has(const char *list, const char *word)
{
    size_t wlen = strlen(word), len;
    const char *item;

    while ((item = util_list_next(&list, &len)) != NULL)
        if (len == wlen && strncasecmp(item, word, len) == 0)
            return 1;
    return 0;
}
