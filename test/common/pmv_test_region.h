/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The target's region as an initiator's option names it: -x BASE:KEY,
 * the two numbers of the target's REGION line.
 */
#ifndef PMV_TEST_REGION_H
#define PMV_TEST_REGION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Parses BASE:KEY (any strtoull base); false unless s is exactly that. */
static inline bool pmv_test_parse_region(const char *s, uint64_t *base,
					 uint64_t *key)
{
	char *end;

	*base = strtoull(s, &end, 0);
	if (*end != ':')
		return false;
	*key = strtoull(end + 1, &end, 0);
	return *end == '\0';
}

#endif /* PMV_TEST_REGION_H */
