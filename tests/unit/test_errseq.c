/* SPDX-License-Identifier: MIT */
/* test_errseq.c - error sequences (pagecache/errseq.h), as lib/errseq.c. */
#include "pagecache/errseq.h"

#include <errno.h>

#include "test.h"

/* Each handle that was open when an error happened reports it once. */
static void test_once_per_handle(void)
{
	mcg_errseq_t e = 0;
	mcg_errseq_t a = mcg_errseq_sample(&e), b = mcg_errseq_sample(&e);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), 0);
	mcg_errseq_set(&e, -EIO);
	CHECK_EQ(e, (unsigned)EIO); /* no one had seen the last one: no counter bump */
	CHECK_EQ(mcg_errseq_check(&e, a), -EIO);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), -EIO);
	CHECK_EQ(e, EIO | MCG_ERRSEQ_SEEN);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), 0); /* once */
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &b), -EIO);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &b), 0);
}

/* A handle opened after an error nobody saw reports it; after it was seen, not. */
static void test_sample_unseen(void)
{
	mcg_errseq_t e = 0;
	mcg_errseq_set(&e, -ENOSPC);
	mcg_errseq_t late = mcg_errseq_sample(&e);
	CHECK_EQ(late, 0);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &late), -ENOSPC);
	mcg_errseq_t later = mcg_errseq_sample(&e);
	CHECK_EQ(later, ENOSPC | MCG_ERRSEQ_SEEN);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &later), 0);
}

/* A new error after a seen one bumps the counter: seen again by everyone. */
static void test_counter(void)
{
	mcg_errseq_t e = 0, a = 0;
	mcg_errseq_set(&e, -EIO);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), -EIO);
	mcg_errseq_t before = e;
	mcg_errseq_set(&e, -EIO);
	CHECK_EQ(e, (before & ~MCG_ERRSEQ_SEEN) + MCG_ERRSEQ_CTR_INC);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), -EIO);
	/* Two errors before anyone looked: one report, the later errno. */
	mcg_errseq_set(&e, -EIO);
	mcg_errseq_t w = e;
	mcg_errseq_set(&e, -ENOSPC);
	CHECK_EQ(e, (w & ~MCG_ERRSEQ_ERRNO_MASK) | ENOSPC);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), -ENOSPC);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &a), 0);
}

static void test_bad_errno_ignored(void)
{
	mcg_errseq_t e = 0;
	CHECK_EQ(mcg_errseq_set(&e, 0), 0);
	CHECK_EQ(mcg_errseq_set(&e, EIO), 0); /* positive: not an error */
	CHECK_EQ(mcg_errseq_set(&e, -5000), 0);
	CHECK_EQ(e, 0);
}

/* check() reports the error since a sample without marking it seen:
 * the same answer twice, and 0 only once a handle has advanced. */
static void test_check_changes_nothing(void)
{
	mcg_errseq_t e = 0, since = mcg_errseq_sample(&e);
	CHECK_EQ(mcg_errseq_check(&e, since), 0);
	mcg_errseq_set(&e, -ENOSPC);
	mcg_errseq_t word = e;
	CHECK_EQ(mcg_errseq_check(&e, since), -ENOSPC);
	CHECK_EQ(mcg_errseq_check(&e, since), -ENOSPC);
	CHECK_EQ(e, word);
	CHECK_EQ(mcg_errseq_check_and_advance(&e, &since), -ENOSPC);
	CHECK_EQ(mcg_errseq_check(&e, since), 0);
}

int main(void)
{
	RUN(test_once_per_handle);
	RUN(test_sample_unseen);
	RUN(test_counter);
	RUN(test_bad_errno_ignored);
	RUN(test_check_changes_nothing);
	return test_done();
}
