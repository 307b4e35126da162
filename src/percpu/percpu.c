/* SPDX-License-Identifier: MIT */
/* percpu/percpu.c - choosing the per-CPU mechanism; the rseq fence (see percpu.h). */
#include "percpu/percpu.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "base/options.h"
#include "os/os.h"

mcg_percpu_mode_t mcg_percpu_mode_ = MCG_PERCPU_LOCKED;
ptrdiff_t mcg_rseq_offset;
static pthread_once_t percpu_once = PTHREAD_ONCE_INIT;

static long membarrier(int cmd, unsigned flags, int cpu)
{
	return syscall(SYS_membarrier, cmd, flags, cpu);
}

static bool rseq_usable(void)
{
	if (!mcg_config_rseq_asm || mcg_config_tsan || !mcg_option(MCG_OPT_RSEQ))
		return false;
	if (__rseq_size < MCG_RSEQ_CPU_ID_OFFSET + 4) /* no cpu_id */
		return false;
	mcg_rseq_offset = __rseq_offset;
	int32_t cpu = (int32_t)mcg_percpu_rseq_area()[MCG_RSEQ_CPU_ID_OFFSET / 4];
	/* A registered rseq area holds this CPU's id, one of the possible ones;
	 * the test guards against a kernel that says otherwise. */
	if (cpu < 0 || (unsigned)cpu >= mcg_os_nr_cpus()) /* GCOVR_EXCL_LINE */
		return false;                             /* GCOVR_EXCL_LINE */
	return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0;
}

/* Locked mode's stand-in for struct rseq: cpu_id reads 0, and a
 * section's descriptor store (offset 8) lands here (mcg_percpu_sections()). */
static mcg_tls uint64_t stopped_rseq_area[4] __attribute__((aligned(32)));

static void percpu_init_once(void)
{
	mcg_os_topology_init();
	mcg_percpu_mode_ = rseq_usable() ? MCG_PERCPU_RSEQ : MCG_PERCPU_LOCKED;
	if (mcg_percpu_mode_ != MCG_PERCPU_RSEQ) /* the same offset in every thread */
		mcg_rseq_offset = (char *)stopped_rseq_area - (char *)__builtin_thread_pointer();
}

void mcg_percpu_init(void) { pthread_once(&percpu_once, percpu_init_once); }

void mcg_percpu_fence(void)
{
	if (!mcg_percpu_use_rseq())
		return;
	/* Registered at start-up, the command cannot fail later: a failure is
	 * a broken kernel, and the fence's guarantee is gone. */
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) != 0) /* GCOVR_EXCL_LINE */
		mcg_die("membarrier(PRIVATE_EXPEDITED_RSEQ) failed after registration"); /* GCOVR_EXCL_LINE
		                                                                          */
}

void mcg_percpu_after_fork_child(void)
{
	if (mcg_percpu_use_rseq())
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0);
}

mcg_public mcg_percpu_mode_t mcg_percpu_mode(void)
{
	mcg_percpu_init();
	return mcg_percpu_mode_;
}

mcg_public unsigned mcg_nr_cpus(void)
{
	mcg_percpu_init();
	return mcg_os_nr_cpus();
}

mcg_public unsigned mcg_nr_nodes(void)
{
	mcg_percpu_init();
	return mcg_os_nr_nodes();
}

mcg_public unsigned mcg_cpu_node(unsigned cpu)
{
	mcg_percpu_init();
	return mcg_os_cpu_node(cpu);
}
