/* SPDX-License-Identifier: MIT */
/*
 * test_perl.c - perl on memcg's allocator through `memcg run`: 150 000 hash
 * inserts, regex matches over every key, arrays of arrays, a sliding window
 * of strings and a reversed hash.  Its output must equal the known result
 * and the output of the same script on glibc's malloc.
 */
#include "progs.h"

static const char script[] =
        "use strict; use warnings;\n"
        "my (%words, %len);\n"
        "my @text;\n"
        "for my $i (1 .. 150000) {\n"
        "    my $w = join(\"\", map { chr(97 + (($i * 2654435761 >> (3 * $_)) % 26)) } 1 .. (3 + "
        "$i % 6));\n"
        "    push @text, \"$w-$i\";\n"
        "    $words{$w}++;\n"
        "    push @{ $len{length $w} }, $i if $i % 7 == 0;\n"
        "    shift @text while @text > 5000;\n"
        "}\n"
        "my $vowel_heavy = grep { /^[^aeiou]*([aeiou][^aeiou]*){3,}$/ } keys %words;\n"
        "my $sum = 0;\n"
        "$sum += $_ for map { scalar @{ $len{$_} } } sort { $a <=> $b } keys %len;\n"
        "my $joined = join \",\", map { s/(\\d+)$/<$1>/r } @text[0 .. 4];\n"
        "my %inv = reverse %words;\n"
        "printf \"%d %d %d %d\\n%s\\n\", scalar(keys %words), $vowel_heavy, $sum, scalar(keys "
        "%inv), $joined;\n";

static const char expected[] =
        "114976 12119 21428 6\n"
        "tctvmbql-<145001>,dxm-<145002>,nrfh-<145003>,xmyml-<145004>,hhrscx-<145005>\n";

static char dir[64];

static void test_perl_native_matches(void)
{
	char *argv[] = {"perl", "churn.pl", NULL};
	struct prog_result r = prog_run(argv, dir, NULL, NULL, 60);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, expected) == 0);
	if (r.status != 0 || strcmp(r.out, expected))
		prog_show_failure("perl on glibc malloc", &r);
	prog_result_free(&r);
}

static void test_perl_under_shim(void)
{
	char *argv[] = {"perl", "churn.pl", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, dir, NULL, NULL, 60);
	CHECK_EQ(r.status, 0);
	CHECK(strcmp(r.out, expected) == 0);
	CHECK(prog_is_report(r.err));
	if (r.status != 0 || strcmp(r.out, expected) || !prog_is_report(r.err))
		prog_show_failure("perl under memcg run", &r);
	prog_result_free(&r);
}

static void test_perl_exit_status_and_die(void)
{
	char *argv[] = {"perl", "-e", "my %h = map { $_ => [$_] } 1..1000; die \"boom\\n\"", NULL};
	struct prog_result r = prog_run_memcg(argv, NULL, dir, NULL, NULL, 60);
	CHECK_EQ(r.status, 255); /* perl's status for die */
	CHECK(strncmp(r.err, "boom\n", 5) == 0);
	CHECK(prog_is_report(r.err));
	CHECK_EQ(r.out_len, 0);
	prog_result_free(&r);
}

int main(void)
{
	if (!prog_which("perl"))
		return test_skip("perl is not installed (scripts/deps.sh installs perl)");
	if (!prog_mkdtemp(dir) || !prog_write_file(dir, "churn.pl", script)) {
		perror("temporary directory");
		return 1;
	}
	RUN(test_perl_native_matches);
	RUN(test_perl_under_shim);
	RUN(test_perl_exit_status_and_die);
	prog_rmtree(dir);
	return test_done();
}
