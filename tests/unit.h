/*
 * unit.h - how a unit test program declares its tests, and the one main()
 * that runs them. A test is written
 *
 *     UNIT_TEST(test_name)
 *     {
 *             ... (the body sees void **state, as cmocka passes it)
 *     }
 *
 * or UNIT_TEST_SETUP(test_name, setup, teardown) for one that runs between
 * the program's setup and teardown functions (cmocka fixtures, defined
 * above it); UNIT_GROUP(setup, teardown) names fixtures run once, around
 * all of a program's tests. The macro defines the function and registers
 * it, and main() runs the registered tests as one cmocka group, in the
 * order they stand in the file: there is no list of tests to keep in step.
 * Included by each test program's .c file after cmocka.h, and by nothing
 * else (it defines main).
 *
 * How: each registration is a constructor function, run before main(),
 * that appends the test to an array; main() sorts it by line. (Not a linker
 * section walked as an array: AddressSanitizer pads globals.)
 */
#ifndef FSP_TESTS_UNIT_H
#define FSP_TESTS_UNIT_H

#include <stdio.h>
#include <stdlib.h>

#define UNIT_MAX 64 /* tests in one program */

struct unit_entry {
	int line;
	struct CMUnitTest test;
};

static struct unit_entry unit_tests[UNIT_MAX];
static size_t unit_ntests;
static CMFixtureFunction unit_group_setup, unit_group_teardown;

static void unit_add(int line, const char *name, CMUnitTestFunction fn,
		     CMFixtureFunction fix_setup, CMFixtureFunction fix_teardown)
{
	if (unit_ntests == UNIT_MAX) {
		fprintf(stderr, "unit.h: more than %d tests, raise UNIT_MAX\n", UNIT_MAX);
		abort();
	}
	unit_tests[unit_ntests++] = (struct unit_entry){
		.line = line,
		.test = { .name = name, .test_func = fn, .setup_func = fix_setup,
			  .teardown_func = fix_teardown },
	};
}

#define UNIT_TEST(name) UNIT_TEST_SETUP(name, NULL, NULL)

#define UNIT_TEST_SETUP(name, fix_setup, fix_teardown)                    \
	static void name(void **state);                                   \
	__attribute__((constructor)) static void unit_add_##name(void)    \
	{                                                                 \
		unit_add(__LINE__, #name, name, fix_setup, fix_teardown); \
	}                                                                 \
	static void name(void **state)

#define UNIT_GROUP(fix_setup, fix_teardown)                         \
	__attribute__((constructor)) static void unit_set_group(void) \
	{                                                           \
		unit_group_setup = fix_setup;                       \
		unit_group_teardown = fix_teardown;                 \
	}

static int unit_by_line(const void *a, const void *b)
{
	const struct unit_entry *x = a, *y = b;
	return (x->line > y->line) - (x->line < y->line);
}

int main(void)
{
	struct CMUnitTest tests[UNIT_MAX];
	qsort(unit_tests, unit_ntests, sizeof(unit_tests[0]), unit_by_line);
	for (size_t i = 0; i < unit_ntests; i++)
		tests[i] = unit_tests[i].test;
	/* what cmocka_run_group_tests(tests, ...) expands to, with the
	 * number of tests registered rather than the array's size */
	return _cmocka_run_group_tests("tests", tests, unit_ntests, unit_group_setup,
				       unit_group_teardown);
}

#endif
