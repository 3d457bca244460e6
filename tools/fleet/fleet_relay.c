/* fleet_relay.c - placeholder replaced below */
#include "fleet.h"
#include <stdio.h>
int fl_relay_run(const struct fl_relay_opts *o)
{
	(void)o;
	fprintf(stderr, "fanofleet: --relay-bench is not built yet\n");
	return 3;
}
