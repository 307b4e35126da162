/* A program built against an installed memcg: find_package or pkg-config. */
#include <memcg/kmalloc.h>
#include <memcg/slab.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	mcg_cache_t *c = mcg_cache_create("consumer", 40, 0, 0, NULL);
	char *p = mcg_cache_alloc(c);
	char *q = mcg_malloc(1000);
	if (!c || !p || !q)
		return 1;
	strcpy(q, "installed memcg works");
	puts(q);
	mcg_free(q);
	mcg_cache_free(c, p);
	return mcg_cache_destroy(c) == 0 ? 0 : 1;
}
