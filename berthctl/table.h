/*
 * table.h: berthctl's tables: aligned columns two spaces apart that fit
 * the terminal's width (TIOCGWINSZ on stdout, else $COLUMNS, else 80).
 * A cell too wide for its column is cut and ends in "..."; a cell is
 * never wrapped. Control characters in cells are shown as '?'.
 */
#ifndef BERTHCTL_TABLE_H
#define BERTHCTL_TABLE_H

#include <stddef.h>

#define TABLE_MAX_COLS	16

struct table {
	size_t ncols, nrows, cap;
	char **cells;
};

/* The width tables are fitted to. */
size_t table_width(void);
/* A row of t->ncols cells (NULL shows as "-"). */
void table_row(struct table *t, ...);
/* Print and empty the table; ncols may be changed before the next row. */
void table_print(struct table *t);
/* One line, cut to the width like a cell. */
void table_line(const char *line);

#endif
