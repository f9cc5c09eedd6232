// SPDX-License-Identifier: GPL-2.0-or-later
/* Handle tables: quotas, owners, stale and forged handles. */
#include <glib.h>

#include "objects.h"
#include "tap.h"

int main(void)
{
	struct pvo_table t;
	int a = 1, b = 2, c = 3;
	uint32_t ha, hb, hc, h, seen = 0;
	void *obj;

	tap_plan(16);
	pvo_table_init(&t, "PD", 2);
	ha = pvo_table_add(&t, &a, 0);
	hb = pvo_table_add(&t, &b, 7);
	tap_ok(ha && hb && ha != hb, "two handles, non-zero and distinct");
	tap_is(pvo_table_add(&t, &c, 0), 0, "third add over quota 2 fails");
	tap_ok(pvo_table_get(&t, ha, 0) == &a, "lookup by owner");
	tap_ok(pvo_table_get(&t, hb, 0) == NULL,
	       "lookup with the wrong owner fails");
	tap_ok(pvo_table_get(&t, 0, 0) == NULL, "handle 0 is never valid");
	tap_ok(pvo_table_get(&t, 0x000fffff, 0) == NULL,
	       "index beyond the table fails");
	tap_ok(pvo_table_remove(&t, hb, 0) == NULL,
	       "remove with the wrong owner fails");
	tap_ok(pvo_table_remove(&t, hb, 7) == &b, "remove with the owner");
	tap_ok(pvo_table_remove(&t, hb, 7) == NULL, "double remove fails");
	hc = pvo_table_add(&t, &c, 7);
	tap_ok(hc && pvo_handle_index(hc) == pvo_handle_index(hb) && hc != hb,
	       "slot reuse gets a new generation");
	tap_ok(pvo_table_get(&t, hb, 7) == NULL,
	       "stale handle does not find the new object");
	for (h = 0; (h = pvo_table_next(&t, h, &obj));)
		seen++;
	tap_is(seen, 2, "iteration visits the live objects");
	/* a reload lowers the quota below the live count */
	pvo_table_set_limit(&t, 1);
	tap_ok(pvo_table_get(&t, ha, 0) == &a && !pvo_table_add(&t, &b, 0),
	       "quota lowered to 1 with 2 live: they stay, an add fails");
	pvo_table_remove(&t, ha, 0);
	tap_is(pvo_table_add(&t, &b, 0), 0, "still full at 1 of 1");
	pvo_table_remove(&t, hc, 7);
	tap_is(t.count, 0, "count back to zero");
	pvo_table_set_limit(&t, 3);
	ha = pvo_table_add(&t, &a, 0);
	hb = pvo_table_add(&t, &b, 0);
	hc = pvo_table_add(&t, &c, 0);
	tap_ok(ha && hb && hc, "quota raised to 3: three fit");
	pvo_table_remove(&t, ha, 0);
	pvo_table_remove(&t, hb, 0);
	pvo_table_remove(&t, hc, 0);
	pvo_table_destroy(&t);
	return tap_done();
}
