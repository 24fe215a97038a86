/*
 * test_cpus.c: the CPU quota read from cgroup v2 and v1 trees made up in
 * a temporary directory, as a pod's or a container's would look.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memfloord.h"

static char root[64];

/* Writes text to root/rel, making the directories on the way. */
static void
put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static unsigned
quota(void)
{
	char self[128];

	snprintf(self, sizeof(self), "%s/self", root);
	return mfd_cpu_quota(root, self);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_cpus.XXXXXX");
	return mkdtemp(root) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* A pod limited to 1.5 CPUs: 150000 of each 100000 us, so 2 threads. */
static void
test_cpu_quota_v2_rounds_up(void **state)
{
	(void)state;
	put("self", "0::/kubepods/pod1/c1\n");
	put("kubepods/pod1/c1/cpu.max", "150000 100000\n");
	assert_int_equal(quota(), 2);
}

/* The smallest limit on the way up counts: the pod's, not the
 * container's, when the pod's is lower. */
static void
test_cpu_quota_v2_least_of_parents(void **state)
{
	(void)state;
	put("self", "0::/kubepods/pod1/c1\n");
	put("kubepods/pod1/c1/cpu.max", "max 100000\n");
	put("kubepods/pod1/cpu.max", "300000 100000\n");
	put("kubepods/cpu.max", "800000 100000\n");
	assert_int_equal(quota(), 3);
}

static void
test_cpu_quota_v2_none(void **state)
{
	(void)state;
	put("self", "0::/user.slice\n");
	put("user.slice/cpu.max", "max 100000\n");
	assert_int_equal(quota(), 0);
}

/* In a container the mount shows its own group at the top while self
 * names the host's path, which is not there. */
static void
test_cpu_quota_v2_container_mount(void **state)
{
	(void)state;
	put("self", "0::/system.slice/docker-abc.scope\n");
	put("cpu.max", "50000 100000\n");
	assert_int_equal(quota(), 1);
}

static void
test_cpu_quota_v1(void **state)
{
	(void)state;
	put("self",
	    "5:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n"
	    "3:memory:/docker/abc\n");
	put("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "400000\n");
	put("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
	/* The memory and cpuset hierarchies hold no CPU quota. */
	put("cpuset/docker/abc/cpu.cfs_quota_us", "100000\n");
	put("cpuset/docker/abc/cpu.cfs_period_us", "100000\n");
	assert_int_equal(quota(), 4);
}

static void
test_cpu_quota_v1_unlimited(void **state)
{
	(void)state;
	put("self", "4:cpu,cpuacct:/\n");
	put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	put("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	assert_int_equal(quota(), 0);
}

static void
test_cpu_quota_unreadable(void **state)
{
	(void)state;
	assert_int_equal(quota(), 0); /* no self file at all */
	put("self", "garbage\n0::relative\n7:cpu:\n");
	put("cpu.max", "junk\n");
	assert_int_equal(quota(), 0);
}

static void
test_cpus_at_least_one(void **state)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	(void)state;
	assert_true(mfd_cpus() >= 1);
	assert_true(mfd_cpus() <= (unsigned)online);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_cpu_quota_v2_rounds_up),
		T(test_cpu_quota_v2_least_of_parents),
		T(test_cpu_quota_v2_none),
		T(test_cpu_quota_v2_container_mount),
		T(test_cpu_quota_v1),
		T(test_cpu_quota_v1_unlimited),
		T(test_cpu_quota_unreadable),
		T(test_cpus_at_least_one),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
