/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * args.h: the command-line parsing the examples share, kept strict so that
 * a typo is an error rather than a server on a random port or a table of a
 * gigabyte. A number is decimal digits only, within its option's range
 * (strtoull() alone reads "abc" as 0 and "-1" as 2^64 - 1); an unknown
 * option, an option without its value, and a stray argument are errors
 * too. Every error is one line on stderr that names the option, and exit
 * status 2:
 *
 *   tcp-conntrack: --port: 'abc' is not a port (0-65535)
 *
 * Messages name the program by ARGS_PROG, which the example defines
 * before it includes this file; not by argv[0], which in a build tree is
 * libtool's .libs/lt-NAME. --help is each example's own: its usage on
 * stdout, exit status 0.
 *
 * Included after <conntab/conntab.h>, it also parses --backend and
 * answers --list-backends for the examples that create a table.
 *
 * A header of static functions, installed beside the examples' sources:
 * each example still builds from one command line, in the directory that
 * holds both.
 */
#ifndef EXAMPLES_ARGS_H
#define EXAMPLES_ARGS_H

#ifndef ARGS_PROG
# error "define ARGS_PROG, the program's name in messages, before args.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The exit status of a command-line error, as getopt-based tools use. */
#define ARGS_EXIT_USAGE	2

/* "PROG: WHAT: message" on stderr, then exit status 2. */
static inline void __attribute__((noreturn, format(printf, 2, 3)))
args_fail(const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", ARGS_PROG, what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(ARGS_EXIT_USAGE);
}

/* --help: @usage on stdout, exit status 0. */
static inline void __attribute__((noreturn)) args_help(const char *usage)
{
	fputs(usage, stdout);
	exit(0);
}

/*
 * The next option, as getopt_long() with no short options, except that
 * its errors are ours: getopt's own messages name argv[0] and do not stop
 * the program. Returns the option's val, or -1 after the last option;
 * call args_end() then.
 */
static inline int args_next(int argc, char **argv,
			    const struct option *lopts)
{
	const char *bad;
	char name[64];
	int c;

	opterr = 0;
	/* ":" first: a missing value is ':', not '?'. */
	c = getopt_long(argc, argv, ":", lopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* A long option is the word before optind; show it without "=...". */
	bad = argv[optind - 1];
	if (strncmp(bad, "--", 2) || !bad[2])
		snprintf(name, sizeof(name), "-%c", optopt ? optopt : '-');
	else
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(bad, "="),
			 bad);
	if (c == ':')
		args_fail(name, "needs a value (--help lists the options)");
	if (optopt && !strncmp(bad, "--", 2))
		args_fail(name, "takes no value");
	args_fail(name, "unknown option (--help lists the options)");
}

/* After the options: nothing may be left. */
static inline void args_end(int argc, char **argv)
{
	if (optind < argc) {
		fprintf(stderr, "%s: '%s': unexpected argument (--help lists "
			"the options)\n", ARGS_PROG, argv[optind]);
		exit(ARGS_EXIT_USAGE);
	}
}

/*
 * The value of option @opt: @arg, an unsigned decimal in [@min, @max].
 * @what names what it is ("a port") in the error.
 */
static inline unsigned long long args_num(const char *opt, const char *arg,
					  unsigned long long min,
					  unsigned long long max,
					  const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	/* strtoull skips blanks and takes a sign: digits only here. */
	if (*arg < '0' || *arg > '9' || *end || errno || v < min || v > max)
		args_fail(opt, "'%s' is not %s (%llu-%llu)", arg, what, min,
			  max);
	return v;
}

/*
 * The value of option @opt: @arg, a numeric IPv4 or IPv6 address (no
 * name lookup), with @port, in *@ss. Returns the address's length.
 */
static inline socklen_t args_addr(const char *opt, const char *arg,
				  unsigned short port,
				  struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	}, *ai;
	char serv[8];
	socklen_t len;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(arg, serv, &hints, &ai))
		args_fail(opt, "'%s' is not an IPv4 or IPv6 address", arg);
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return len;
}

#ifdef CONNTAB_CONNTAB_H
/* Every backend name, as conntab_backend_name() stops at "unknown". */
#define args_for_each_backend(b)					\
	for ((b) = CONNTAB_CHAINED;					\
	     strcmp(conntab_backend_name((enum conntab_backend)(b)),	\
		    "unknown"); (b)++)

/* --list-backends: those this build of the library has, one a line. */
static inline void __attribute__((noreturn)) args_list_backends(void)
{
	int b;

	args_for_each_backend(b)
		if (conntab_backend_available((enum conntab_backend)b))
			puts(conntab_backend_name((enum conntab_backend)b));
	exit(0);
}

/* The value of option @opt: @arg, a backend this library has. */
static inline enum conntab_backend args_backend(const char *opt,
						const char *arg)
{
	char have[128] = "";
	int b = conntab_backend_from_name(arg);

	if (b >= 0 && conntab_backend_available((enum conntab_backend)b))
		return (enum conntab_backend)b;
	args_for_each_backend(b)
		if (conntab_backend_available((enum conntab_backend)b))
			snprintf(have + strlen(have),
				 sizeof(have) - strlen(have), "%s%s",
				 *have ? ", " : "",
				 conntab_backend_name((enum conntab_backend)b));
	args_fail(opt, "'%s' is not a backend of this library (%s)", arg,
		  have);
}
#endif /* CONNTAB_CONNTAB_H */

#endif /* EXAMPLES_ARGS_H */
