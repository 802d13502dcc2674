#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "tests/unit.h"
UNIT_TEST(placeholder) { (void)state; }
