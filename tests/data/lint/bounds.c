/*
 * bounds.c: what tests/lib/bounds.py must refuse and must let pass.  make
 * lint runs it on this file with --expect: each line marked as refused in
 * a comment must be named, and no other.  Never compiled into anything.
 */
#include <assert.h>
#include <stddef.h>

#define SLOTS 8
#define OTHER 300

struct ring {
	int slot[SLOTS];
	size_t n;
};

static const char *const names[] = { "a", "b", "c" };
static int other[OTHER];

int unchecked(struct ring *r, size_t i);
int above(struct ring *r, size_t i);
int elsewhere(struct ring *r, size_t i);
int count(struct ring *r);
int after(size_t i);
int unbounded(struct ring *r, size_t i);
int checked(struct ring *r, size_t i, unsigned char c, unsigned v);

int
unchecked(struct ring *r, size_t i)
{
	return r->slot[i] + (names[i] != NULL); /* refused */
}

int
above(struct ring *r, size_t i)
{
	if (i < 2 * SLOTS)         /* more than the bound */
		return r->slot[i]; /* refused */
	return 0;
}

int
elsewhere(struct ring *r, size_t i)
{
	if (i < sizeof(names) / sizeof(names[0])) /* another array's bound */
		return r->slot[i];                /* refused */
	return 0;
}

int
count(struct ring *r)
{
	int sum = 0;

	for (size_t k = 0; k < r->n; k++) /* nothing checks r->n */
		sum += r->slot[k];        /* refused */
	return sum;
}

int
after(size_t i)
{
	int v = other[i]; /* refused: the check comes after */

	assert(i < OTHER);
	return v;
}

int
unbounded(struct ring *r, size_t i)
{
	if (i == 0)                /* a comparison, but with no bound */
		return r->slot[i]; /* refused */
	return r->slot[i + 1];     /* refused */
}

int
checked(struct ring *r, size_t i, unsigned char c, unsigned v)
{
	int sum = 0;

	if (i >= SLOTS)
		return -1;
	sum += r->slot[i];
	assert(r->n <= SLOTS);
	for (size_t k = 0; k < r->n; k++)
		sum += r->slot[k];
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		sum += names[k][0];
	sum += r->slot[v & 7] + r->slot[i != 0] + other[c];
	assert(v < OTHER);
	return sum + other[v] + r->slot[3];
}
