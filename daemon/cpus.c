/*
 * cpus.c: how many CPUs the daemon may use, for its default thread count.
 *
 * In a container sysconf counts every core of the node.  What the process
 * may run on is its affinity mask (a cpuset), and what it may use is its
 * cgroup's CPU quota: a pod limited to 2 CPUs on a 64-core node that ran
 * 64 threads would spend its quota in a few milliseconds and sit out the
 * rest of each period.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../admission/base/buf.h"
#include "memfloord.h"

static FILE *
open_in(const char *dir, const char *name)
{
	char path[4200];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return NULL;
	return fopen(path, "r");
}

/* The first number in dir/name, or -1. */
static long long
number_in(const char *dir, const char *name)
{
	long long v = -1;
	FILE *f = open_in(dir, name);

	if (f == NULL)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Whole CPUs in quota/period, rounded up; 0 for no limit or no file. */
static unsigned
quota_at(const char *dir, int v2)
{
	long long quota = -1, period = -1;
	char word[32];
	FILE *f;

	if (v2) {
		f = open_in(dir, "cpu.max");
		if (f == NULL)
			return 0;
		/* "max 100000" has no limit: word is not a number. */
		if (fscanf(f, "%31s %lld", word, &period) == 2 &&
		    sscanf(word, "%lld", &quota) != 1)
			quota = -1;
		fclose(f);
	} else {
		quota = number_in(dir, "cpu.cfs_quota_us");
		period = number_in(dir, "cpu.cfs_period_us");
	}
	if (quota <= 0 || period <= 0)
		return 0;
	return (unsigned)((quota + period - 1) / period);
}

/*
 * The smallest quota on the way from the cgroup up to the mount point.
 * Inside a container the mount may show the container's own group at its
 * top while /proc/self/cgroup names the host's path: those directories do
 * not exist, and the walk ends at the top, which is the container's.
 */
static unsigned
quota_up(const char *mount, char *group, int v2)
{
	char dir[4096];
	unsigned least = 0, q;
	char *slash;

	for (;;) {
		snprintf(dir, sizeof(dir), "%s%s", mount, group);
		q = quota_at(dir, v2);
		if (q > 0 && (least == 0 || q < least))
			least = q;
		slash = strrchr(group, '/');
		if (slash == NULL || (slash == group && group[1] == '\0'))
			return least;
		slash[slash == group ? 1 : 0] = '\0';
	}
}

/* Whether a v1 hierarchy's controller list ("cpu,cpuacct") has cpu. */
static int
has_cpu(const char *ctl)
{
	size_t n;

	for (; *ctl != '\0'; ctl += n + (ctl[n] == ',')) {
		n = strcspn(ctl, ",");
		if (n == 3 && strncmp(ctl, "cpu", 3) == 0)
			return 1;
	}
	return 0;
}

unsigned
mfd_cpu_quota(const char *root, const char *self)
{
	char line[4096], mount[4096];
	unsigned least = 0, q;
	FILE *f = fopen(self, "r");

	if (f == NULL)
		return 0;
	/* "0::/path" for cgroup v2; "3:cpu,cpuacct:/path" for v1. */
	while (fgets(line, sizeof(line), f) != NULL) {
		char *ctl = strchr(line, ':'), *group;
		int v2;

		if (ctl == NULL || (group = strchr(++ctl, ':')) == NULL)
			continue;
		*group++ = '\0';
		group[strcspn(group, "\n")] = '\0';
		v2 = strncmp(line, "0:", 2) == 0 && *ctl == '\0';
		if (v2)
			mf_copy(mount, sizeof(mount), root);
		else if (has_cpu(ctl))
			snprintf(mount, sizeof(mount), "%s/%s", root, ctl);
		else
			continue;
		if (*group != '/')
			continue;
		q = quota_up(mount, group, v2);
		if (q > 0 && (least == 0 || q < least))
			least = q;
	}
	fclose(f);
	return least;
}

unsigned
mfd_cpus(void)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned cpus, quota;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	cpus = n > 0 ? (unsigned)n : 1;
	quota = mfd_cpu_quota("/sys/fs/cgroup", "/proc/self/cgroup");
	return quota > 0 && quota < cpus ? quota : cpus;
}
