/*
 * NAME
 *	params_man 1 - sluice.conf(5) and the README's parameter table,
 *	from the parameter table itself
 * SYNOPSIS
 *	params_man man TEMPLATE
 *	params_man readme README
 * DESCRIPTION
 *	The parameters' names, types, bounds, defaults and overrides are
 *	written once, in src/conf/params.def; this program reads them from
 *	the compiled table (conf_params[]), so that the documents cannot
 *	say anything else (decision 88). "make man" runs it; docs.sh
 *	checks that the committed documents are what it writes.
 *
 *	"man" copies TEMPLATE (doc/sluice.conf.5.in) to standard output
 *	and replaces each line "@PARAM NAME" with the head of NAME's entry:
 *	.TP, the name in bold, then its type (integers with their bounds,
 *	choices with their words, times with a default unit other than
 *	seconds), its default and its override, then .br; the lines after
 *	it in TEMPLATE are its description. Every parameter must have
 *	exactly one such line and every such line must name a parameter:
 *	otherwise nothing is written, each problem goes to standard error
 *	and the exit status is 1.
 *
 *	"readme" copies README to standard output with the lines between
 *	"<!-- parameters: made by make man -->" and "<!-- end of
 *	parameters -->" replaced by a table of every parameter: its
 *	default, its override and the one-line summary of params.def.
 *
 *	A test and build tool, not installed.
 */

#include "conf/conf.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 8192

#define README_BEGIN "<!-- parameters: made by make man -->"
#define README_END   "<!-- end of parameters -->"

static const char *const type_names[] = {
    [CONF_INT] = "integer",   [CONF_TIME] = "time",
    [CONF_BOOL] = "boolean",  [CONF_FEEDBACK] = "feedback",
    [CONF_CHOICE] = "choice", [CONF_STRING] = "string",
    [CONF_LIST] = "list",
};

/* Defaults known only at run time (daemon_conf_create()). */
static const char *runtime_default(const char *name)
{
    if (strcmp(name, "myhostname") == 0)
        return "this system's fully qualified name";
    return NULL;
}

static const char *unit_name(char unit)
{
    switch (unit) {
    case 'm':
        return "minutes";
    case 'h':
        return "hours";
    case 'd':
        return "days";
    case 'w':
        return "weeks";
    default:
        return NULL;
    }
}

/* A roff argument: quoted when it holds a blank, backslashes doubled. */
static void roff_arg(const char *text)
{
    int quote = strpbrk(text, " \t") != NULL;

    if (quote)
        putchar('"');
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            putchar('\\');
        putchar(*p);
    }
    if (quote)
        putchar('"');
}

/* "of a, b or c," as roff lines. */
static void choice_words(const char *choices)
{
    char words[512];
    char *w[32];
    int count = 0;

    snprintf(words, sizeof(words), "%s", choices);
    for (char *p = strtok(words, "|"); p && count < 32; p = strtok(NULL, "|"))
        w[count++] = p;
    printf("of\n");
    for (int i = 0; i < count; i++) {
        if (i == count - 1 && count > 1)
            printf("or\n");
        printf(i == count - 2 ? ".B %s\n" : ".BR %s ,\n", w[i]);
    }
}

static void entry_type(const struct conf_def *p)
{
    const char *unit = unit_name(p->unit);

    if (p->type == CONF_INT) {
        printf(".RI ( integer\n");
        if (p->max == LONG_MAX)
            printf("of at least %ld, ", p->min);
        else
            printf("%ld\\(en%ld, ", p->min, p->max);
        return;
    }
    if (p->type == CONF_CHOICE) {
        printf(".RI ( choice\n");
        choice_words(p->choices);
        return;
    }
    printf(".RI ( %s ,\n", type_names[p->type]);
    if (p->type == CONF_TIME && unit != NULL)
        printf("default unit %s, ", unit);
}

static void entry_head(const struct conf_def *p)
{
    const char *rt = runtime_default(p->name);
    const char *end = p->suffix ? ";" : ")";

    printf(".TP\n.B %s\n", p->name);
    entry_type(p);
    if (rt != NULL)
        printf("default: %s%s\n", rt, end);
    else if (p->defval[0] == 0)
        printf("default empty%s\n", end);
    else {
        printf("default\n.BR ");
        roff_arg(p->defval);
        printf(" %s\n", end);
    }
    if (p->suffix)
        printf("override\n.IB transport %s\\fR)\\fP\n", p->suffix);
    printf(".br\n");
}

static const struct conf_def *param_named(const char *name)
{
    for (size_t i = 0; i < conf_param_count; i++)
        if (strcmp(conf_params[i].name, name) == 0)
            return &conf_params[i];
    return NULL;
}

static char **lines_read(const char *path, size_t *count)
{
    FILE *fp = fopen(path, "r");
    char buf[LINE_MAX_LEN], **lines = NULL;
    size_t n = 0;

    if (fp == NULL) {
        perror(path);
        exit(1);
    }
    while (fgets(buf, sizeof(buf), fp) != NULL) {
        buf[strcspn(buf, "\n")] = 0;
        lines = realloc(lines, (n + 1) * sizeof(*lines));
        if (lines == NULL || (lines[n++] = strdup(buf)) == NULL) {
            perror("params_man");
            exit(1);
        }
    }
    fclose(fp);
    *count = n;
    return lines;
}

/* Each parameter once, each @PARAM a parameter: the count of problems. */
static int template_check(const char *path, char **lines, size_t count)
{
    int problems = 0;

    for (size_t i = 0; i < conf_param_count; i++) {
        int seen = 0;

        for (size_t k = 0; k < count; k++)
            if (strncmp(lines[k], "@PARAM ", 7) == 0 &&
                strcmp(lines[k] + 7, conf_params[i].name) == 0)
                seen++;
        if (seen != 1) {
            fprintf(stderr, "%s: %s: %d @PARAM lines, want 1\n", path,
                    conf_params[i].name, seen);
            problems++;
        }
    }
    for (size_t k = 0; k < count; k++)
        if (strncmp(lines[k], "@PARAM ", 7) == 0 &&
            param_named(lines[k] + 7) == NULL) {
            fprintf(stderr, "%s, line %zu: %s is not a parameter\n", path,
                    k + 1, lines[k] + 7);
            problems++;
        }
    return problems;
}

static void lines_free(char **lines, size_t count)
{
    for (size_t k = 0; k < count; k++)
        free(lines[k]);
    free(lines);
}

static int man(const char *path)
{
    size_t count;
    char **lines = lines_read(path, &count);

    if (template_check(path, lines, count) != 0) {
        lines_free(lines, count);
        return 1;
    }
    for (size_t k = 0; k < count; k++) {
        if (strncmp(lines[k], "@PARAM ", 7) == 0)
            entry_head(param_named(lines[k] + 7));
        else
            printf("%s\n", lines[k]);
        if (k == 0)
            printf(".\\\" Made by \"make man\" from doc/sluice.conf.5.in "
                   "and src/conf/params.def:\n.\\\" edit those, not this "
                   "file.\n");
    }
    lines_free(lines, count);
    return 0;
}

/* A table cell: "|" escaped. */
static void cell(const char *text)
{
    for (const char *p = text; *p; p++)
        printf(*p == '|' ? "\\|" : "%c", *p);
}

static void readme_table(void)
{
    printf("| parameter | default | per transport | what |\n"
           "|---|---|---|---|\n");
    for (size_t i = 0; i < conf_param_count; i++) {
        const struct conf_def *p = &conf_params[i];
        const char *rt = runtime_default(p->name);

        printf("| `%s` | ", p->name);
        if (rt != NULL)
            printf("%s", rt);
        else if (p->defval[0] == 0)
            printf("(empty)");
        else {
            printf("`");
            cell(p->defval);
            printf("`");
        }
        printf(" | %s%s%s | ", p->suffix ? "`TRANSPORT" : "",
               p->suffix ? p->suffix : "", p->suffix ? "`" : "");
        cell(p->summary);
        printf(" |\n");
    }
}

static int readme(const char *path)
{
    size_t count, k = 0;
    char **lines = lines_read(path, &count);

    while (k < count && strcmp(lines[k], README_BEGIN) != 0)
        printf("%s\n", lines[k++]);
    if (k == count) {
        fprintf(stderr, "%s: no line \"%s\"\n", path, README_BEGIN);
        lines_free(lines, count);
        return 1;
    }
    printf("%s\n", lines[k++]);
    while (k < count && strcmp(lines[k], README_END) != 0)
        k++;
    if (k == count) {
        fprintf(stderr, "%s: no line \"%s\"\n", path, README_END);
        lines_free(lines, count);
        return 1;
    }
    readme_table();
    while (k < count)
        printf("%s\n", lines[k++]);
    lines_free(lines, count);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "man") == 0)
        return man(argv[2]);
    if (argc == 3 && strcmp(argv[1], "readme") == 0)
        return readme(argv[2]);
    fprintf(stderr, "usage: params_man man TEMPLATE | readme README\n");
    return 2;
}
