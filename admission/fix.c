#include "fix.h"

#include <string.h>

static const char *const names[MF_FIX_COUNT] = {
	"sdpa",
	"microbatch",
	"autocast",
	"checkpointing",
	"adam8bit",
	"lora",
	"qlora",
	"fsdp",
};

const char *
mf_fix_name(enum mf_fix f)
{
	return (unsigned)f < MF_FIX_COUNT ? names[f] : NULL;
}

int
mf_fix_lookup(const char *name)
{
	for (int i = 0; i < MF_FIX_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}
