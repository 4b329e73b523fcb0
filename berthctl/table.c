/*
 * table.c: tables fitted to the terminal (see table.h). Widths are
 * counted in bytes: the API's identifiers and words are ASCII.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "table.h"

/* The narrowest a column is cut to: the widest are cut first. */
#define MIN_COL	1

size_t
table_width(void)
{
	struct winsize ws;
	const char *env;
	long n;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if ((env = getenv("COLUMNS")) != NULL && (n = strtol(env, NULL,
	    10)) > 0 && n < 10000)
		return (size_t)n;
	return 80;
}

static char *
cell_dup(const char *c)
{
	char *s, *p;

	if ((s = strdup(c != NULL ? c : "-")) == NULL) {
		fprintf(stderr, "berthctl: out of memory\n");
		exit(1);
	}
	for (p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return s;
}

void
table_row(struct table *t, ...)
{
	va_list ap;
	size_t i;

	if (t->nrows == t->cap) {
		t->cap = t->cap * 2 + 8;
		t->cells = realloc(t->cells, t->cap * TABLE_MAX_COLS *
		    sizeof(char *));
		if (t->cells == NULL) {
			fprintf(stderr, "berthctl: out of memory\n");
			exit(1);
		}
	}
	va_start(ap, t);
	for (i = 0; i < t->ncols && i < TABLE_MAX_COLS; i++)
		t->cells[t->nrows * TABLE_MAX_COLS + i] = cell_dup(va_arg(ap,
		    const char *));
	va_end(ap);
	t->nrows++;
}

/* Narrow the widest column, one byte at a time, until the row fits. */
static void
fit(size_t *w, size_t ncols, size_t width)
{
	size_t total, i, widest;

	for (;;) {
		total = 2 * (ncols - 1);
		widest = 0;
		for (i = 0; i < ncols; i++) {
			total += w[i];
			if (w[i] > w[widest])
				widest = i;
		}
		if (total <= width || w[widest] <= MIN_COL)
			return;
		w[widest]--;
	}
}

static void
put_cell(const char *c, size_t w, int pad)
{
	size_t len = strlen(c);

	if (len > w && w > 3)
		printf("%.*s...", (int)(w - 3), c);
	else if (len > w)
		printf("%.*s", (int)w, c);
	else
		printf("%s", c);
	if (pad)
		printf("%*s", (int)(len < w ? w - len : 0) + 2, "");
}

void
table_print(struct table *t)
{
	size_t w[TABLE_MAX_COLS] = { 0 }, i, j, len;
	size_t n = t->ncols < TABLE_MAX_COLS ? t->ncols : TABLE_MAX_COLS;
	char *c;

	for (i = 0; i < t->nrows; i++)
		for (j = 0; j < n; j++)
			if ((len = strlen(t->cells[i * TABLE_MAX_COLS + j])) >
			    w[j])
				w[j] = len;
	if (n > 0)
		fit(w, n, table_width());
	for (i = 0; i < t->nrows; i++) {
		for (j = 0; j < n; j++) {
			c = t->cells[i * TABLE_MAX_COLS + j];
			put_cell(c, w[j], j + 1 < n);
			free(c);
		}
		printf("\n");
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

void
table_line(const char *line)
{
	char *c = cell_dup(line);

	put_cell(c, table_width(), 0);
	printf("\n");
	free(c);
}
