/* SPDX-License-Identifier: MIT */
/*
 * test_gcc.c - gcc on memcg's allocator through `memcg run`: compile a small
 * C program at -O2 (gcc forks cc1, as and collect2/ld, all on the shim), run
 * the result (also under the shim) and check its output; a program with a
 * syntax error must fail with gcc's diagnostic and status.
 */
#include "progs.h"

static const char source[] =
        "#include <stdio.h>\n"
        "#include <stdlib.h>\n"
        "#include <string.h>\n"
        "struct node { struct node *next; char name[24]; unsigned long v; };\n"
        "static unsigned long fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
        "int main(int argc, char **argv)\n"
        "{\n"
        "\tstruct node *head = NULL;\n"
        "\tfor (unsigned i = 0; i < 100000; i++) {\n"
        "\t\tstruct node *n = malloc(sizeof(*n));\n"
        "\t\tsnprintf(n->name, sizeof(n->name), \"node-%u\", i);\n"
        "\t\tn->v = i * 3u;\n"
        "\t\tn->next = head;\n"
        "\t\thead = n;\n"
        "\t}\n"
        "\tunsigned long sum = 0;\n"
        "\twhile (head) {\n"
        "\t\tstruct node *n = head;\n"
        "\t\thead = n->next;\n"
        "\t\tsum += n->v + strlen(n->name);\n"
        "\t\tfree(n);\n"
        "\t}\n"
        "\tprintf(\"sum %lu fib %lu args %d\\n\", sum, fib(25), argc);\n"
        "\treturn 42;\n"
        "}\n";

static char dir[64];

static void test_gcc_compiles_and_runs(void)
{
	REQUIRE(prog_write_file(dir, "prog.c", source));
	char *cc[] = {"gcc", "-O2", "-Wall", "-Werror", "-o", "prog", "prog.c", NULL};
	struct prog_result r = prog_run_memcg(cc, NULL, dir, NULL, NULL, 60);
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.out_len, 0);
	CHECK(prog_is_report(r.err)); /* gcc reports; cc1, as, ld do not */
	if (r.status != 0 || !prog_is_report(r.err))
		prog_show_failure("gcc under memcg run", &r);
	prog_result_free(&r);

	/* 100000 nodes: sum of 3i plus the name lengths; fib(25) = 75025. */
	const char *want = "sum 15000838890 fib 75025 args 2\n";
	char *run[] = {"./prog", "x", NULL};
	r = prog_run(run, dir, NULL, NULL, 30);
	CHECK_EQ(r.status, 42);
	CHECK(strcmp(r.out, want) == 0);
	prog_result_free(&r);
	r = prog_run_memcg(run, NULL, dir, NULL, NULL, 30);
	CHECK_EQ(r.status, 42);
	CHECK(strcmp(r.out, want) == 0);
	CHECK(prog_is_report(r.err));
	if (strcmp(r.out, want))
		prog_show_failure("the compiled program", &r);
	prog_result_free(&r);
}

static void test_gcc_reports_errors(void)
{
	REQUIRE(prog_write_file(dir, "bad.c", "int main(void) { return undeclared_thing; }\n"));
	char *cc[] = {"gcc", "-c", "-o", "bad.o", "bad.c", NULL};
	char *env[] = {"LC_ALL=C", NULL}; /* plain quotes in the diagnostic */
	struct prog_result r = prog_run_memcg(cc, NULL, dir, env, NULL, 60);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "'undeclared_thing' undeclared") != NULL);
	CHECK(prog_is_report(r.err));
	prog_result_free(&r);
}

int main(void)
{
	if (!prog_which("gcc"))
		return test_skip("gcc is not installed (scripts/deps.sh installs build-essential)");
	if (!prog_mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_gcc_compiles_and_runs);
	RUN(test_gcc_reports_errors);
	prog_rmtree(dir);
	return test_done();
}
