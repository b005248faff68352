# sluice: GNU Makefile.
#
#   make            build the programs into build/ (warnings are errors)
#   make demo       run sluiced on loopback: a mixed workload to local sinks
#   make sim-demo   run the simulator on the seed's tables and sequences
#   make bench      build the benchmarks into build/bench/ (run by hand)
#   make check      build and run every test; the last line is "N passed, N failed"
#   make asan       the same tests under AddressSanitizer and UBSan (build-asan/)
#   make valgrind   the unit tests under valgrind's memcheck, leaks included
#   make fuzz       the libFuzzer targets (clang), FUZZ_SECONDS each
#   make plots      draw the simulator's window-over-time plots into doc/
#   make man        write doc/sluice.conf.5 and the README's parameter table
#                   from src/conf/params.def (and doc/sluice.conf.5.in)
#   make install    install programs, manual pages, a default configuration
#                   and a systemd unit (PREFIX, DESTDIR; see below)
#   make format     clang-format every source file
#
# Every src/<layer>/*.c except a layer's main.c goes into build/libsluice.a;
# src/cli/main.c is build/sluice, src/sim/main.c is build/sluice-sim,
# src/daemon/main.c is build/sluiced.
# tests/unit/test_*.c are cmocka programs linked against the library;
# tests/tools/*.c are helpers the integration tests run (BUILD/tools/).

PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= /etc
BUILD      ?= build

CC       ?= cc
LIB_PKGS := lmdb libevent libevent_openssl openssl libcares libcurl zlib
PKGS     := cmocka
OPT      ?= -O2
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
            -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Isrc \
            -DSLUICE_CONFIG_FILE='"$(SYSCONFDIR)/sluice/sluice.conf"'
CFLAGS   += $(shell pkg-config --cflags $(LIB_PKGS))
LDLIBS   += $(shell pkg-config --libs $(LIB_PKGS)) -lcrypt -lpthread -lm
# hiredis by its libraries alone: its --cflags would put hiredis/ (alloc.h,
# read.h, ...) on the include path; sources say <hiredis/async.h>.
LDLIBS   += $(shell pkg-config --libs hiredis)
TEST_CFLAGS := $(shell pkg-config --cflags $(PKGS))
TEST_LIBS   := $(shell pkg-config --libs $(PKGS))

MAINS    := src/cli/main.c src/sim/main.c src/daemon/main.c
LIB_SRC  := $(filter-out $(MAINS),$(wildcard src/*/*.c))
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
TEST_SRC := $(wildcard tests/unit/test_*.c)
TESTS    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
PROGS    := $(BUILD)/sluice $(BUILD)/sluice-sim $(BUILD)/sluiced
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOLS    := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))

.PHONY: all check asan asan-build fuzz-build valgrind demo sim-demo bench fuzz plots man install \
	format clean
all: $(PROGS) $(TESTS) $(TOOLS)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/libsluice.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/sluice: $(BUILD)/obj/cli/main.o $(BUILD)/libsluice.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sluice-sim: $(BUILD)/obj/sim/main.o $(BUILD)/libsluice.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sluiced: $(BUILD)/obj/daemon/main.o $(BUILD)/libsluice.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_CFLAGS) -Itests/unit -MMD -MP $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libsluice.a $(TEST_LIBS) $(LDLIBS)

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP $(LDFLAGS) -o $@ $< $(BUILD)/libsluice.a $(LDLIBS)

check: all
	@SKIP="$(SKIP)" sh tests/run.sh $(BUILD)

# The sanitizer build lives in its own tree so that it never mixes objects
# with the optimized one.
# limiter_421 measures the feedback's statistics, not memory: its
# 45 s are spent in the plain run only (tests/run.sh's SKIP).
# asan-build builds that tree without running anything.
ASAN_CC := $(CC) -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
ASAN_SKIP ?= limiter_421

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 CC="$(ASAN_CC)" SKIP="$(ASAN_SKIP)" check

asan-build:
	$(MAKE) BUILD=build-asan OPT=-O1 CC="$(ASAN_CC)" all

demo: $(PROGS)
	@sh scripts/demo.sh $(BUILD)

sim-demo: $(BUILD)/sluice-sim
	@for t in limiter-421 limiter-421-postfix3 connect-timeout \
	    greeting-timeout load-balancer headline; do \
	    echo "== sim/scenarios/$$t"; \
	    $(BUILD)/sluice-sim sim/scenarios/$$t/*.conf || exit 1; \
	done
	@echo "== sim/scenarios/golden (delivery sequences)"
	@$(BUILD)/sluice-sim --sequence sim/scenarios/golden/*.conf

BENCH_SRC := $(wildcard bench/*.c)
BENCHES   := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

bench: $(BENCHES)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP $(LDFLAGS) -o $@ $< $(BUILD)/libsluice.a $(LDLIBS)

# Children forked by tests exit without freeing what they inherited: only
# the test processes themselves are checked.
valgrind: $(TESTS)
	@fail=0; for t in $(TESTS); do \
	    valgrind -q --leak-check=full --error-exitcode=9 \
	        --child-silent-after-fork=yes $$t >/dev/null 2>$$t.vg; \
	    rc=$$?; echo "$$t: exit $$rc"; \
	    if [ $$rc -ne 0 ]; then fail=1; cat $$t.vg; fi; \
	done; exit $$fail

# libFuzzer targets (clang): tests/fuzz/fuzz_NAME.c, built with the
# sanitizers against the sources they need, run for FUZZ_SECONDS each
# over their seed corpus (copied: the corpus in git stays as it is).
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_FLAGS   := -g -O1 -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=all -Isrc -D_DEFAULT_SOURCE \
                -D_POSIX_C_SOURCE=200809L
FUZZ_SMTP    := $(wildcard src/smtp/*.c src/util/*.c)
FUZZ_SMTPD   := $(FUZZ_SMTP) $(wildcard src/ingress/*.c src/spool/*.c \
                src/tls/*.c src/sasl/*.c src/dkim/*.c)
FUZZ_STS     := src/sts/policy.c src/sts/txt.c src/sts/mx.c \
                $(wildcard src/util/*.c)
FUZZ_TARGETS := smtp_command smtp_data smtp_mime smtpd_session sts_policy \
                smtp_auth tls_policy

build-fuzz/fuzz_smtp_%: tests/fuzz/fuzz_smtp_%.c $(FUZZ_SMTP) src/smtp/smtp.h src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SMTP)

# TLS reporting's TXT parser and the counts' line form need util/ alone
# (mail.c, with zlib, is not fuzzed: it reads nothing from outside).
FUZZ_TLSRPT  := src/tlsrpt/table.c src/tlsrpt/report.c src/tlsrpt/txt.c \
                $(wildcard src/util/*.c)
FUZZ_TARGETS += tlsrpt

build-fuzz/fuzz_tlsrpt: tests/fuzz/fuzz_tlsrpt.c $(FUZZ_TLSRPT) \
	    src/tlsrpt/tlsrpt.h src/tlsrpt/tlsrpt_impl.h src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_TLSRPT)

# util/'s parsers need util/ alone.
FUZZ_TARGETS += util_json

build-fuzz/fuzz_util_%: tests/fuzz/fuzz_util_%.c $(wildcard src/util/*.c) \
	    src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(wildcard src/util/*.c)

# The session target runs the real server on libevent, with the spool's
# message type: it links what ingress/ needs.
build-fuzz/fuzz_smtpd_session: tests/fuzz/fuzz_smtpd_session.c $(FUZZ_SMTPD) \
	    $(wildcard src/ingress/*.h src/spool/*.h src/smtp/*.h src/tls/*.h \
	    src/sasl/*.h src/dkim/*.h)
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell pkg-config --cflags $(LIB_PKGS)) \
	    -o $@ $< $(FUZZ_SMTPD) \
	    $(shell pkg-config --libs lmdb libevent libevent_openssl openssl) \
	    -lcrypt -lpthread

# MTA-STS's parsers need util/ alone (no libcurl, no libevent).
build-fuzz/fuzz_sts_policy: tests/fuzz/fuzz_sts_policy.c $(FUZZ_STS) \
	    src/sts/sts.h src/sts/sts_impl.h src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_STS)

# The TLS policy parser needs OpenSSL's version numbers and util/.
build-fuzz/fuzz_tls_policy: tests/fuzz/fuzz_tls_policy.c src/tls/policy.c \
	    $(wildcard src/util/*.c) src/tls/tls.h src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell pkg-config --cflags openssl) -o $@ $< \
	    src/tls/policy.c $(wildcard src/util/*.c) \
	    $(shell pkg-config --libs openssl)

# DKIM's parsers, canonicalization and signing need OpenSSL and util/.
FUZZ_DKIM    := $(wildcard src/dkim/*.c src/util/*.c)
FUZZ_TARGETS += dkim

build-fuzz/fuzz_dkim: tests/fuzz/fuzz_dkim.c $(FUZZ_DKIM) \
	    src/dkim/dkim.h src/dkim/dkim_impl.h src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell pkg-config --cflags openssl) -o $@ $< \
	    $(FUZZ_DKIM) $(shell pkg-config --libs openssl)

# SMTP AUTH's passwd-file lines and PLAIN/LOGIN messages: sasl/'s parsers
# and util/ (libcrypt only to ask which hash methods it has).
FUZZ_SASL    := src/sasl/mech.c src/sasl/passwd.c $(wildcard src/util/*.c)
FUZZ_TARGETS += sasl

build-fuzz/fuzz_sasl: tests/fuzz/fuzz_sasl.c $(FUZZ_SASL) src/sasl/sasl.h \
	    src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SASL) -lcrypt -lpthread

# The scheduler rules file of the zmailer scheduler: conf/'s rules and
# time parser (conf/ but sched.c, which needs core/), and util/ (the
# table reader).
FUZZ_RULES   := $(filter-out src/conf/sched.c,$(wildcard src/conf/*.c)) \
                $(wildcard src/util/*.c)
FUZZ_TARGETS += conf_rules

build-fuzz/fuzz_conf_rules: tests/fuzz/fuzz_conf_rules.c $(FUZZ_RULES) \
	    src/conf/conf.h src/core/core.h src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_RULES) -lm

# The hungry protocol's codec (external agents): deliver/hungry.c with
# smtp/ (enhanced codes, UTF-8) and util/.
FUZZ_HUNGRY  := src/deliver/hungry.c $(FUZZ_SMTP)
FUZZ_TARGETS += deliver_hungry

build-fuzz/fuzz_deliver_hungry: tests/fuzz/fuzz_deliver_hungry.c \
	    $(FUZZ_HUNGRY) src/deliver/agent_impl.h src/deliver/deliver.h \
	    src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell pkg-config --cflags openssl) -o $@ $< \
	    $(FUZZ_HUNGRY)

# The agent spawner's messages (decision 134): deliver/spawn.c and util/.
FUZZ_SPAWN   := src/deliver/spawn.c $(wildcard src/util/*.c)
FUZZ_TARGETS += deliver_spawn

build-fuzz/fuzz_deliver_spawn: tests/fuzz/fuzz_deliver_spawn.c \
	    $(FUZZ_SPAWN) src/deliver/agent_impl.h src/deliver/deliver.h \
	    src/util/util.h
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) $(shell pkg-config --cflags openssl) -o $@ $< \
	    $(FUZZ_SPAWN)

fuzz-build: $(patsubst %,build-fuzz/fuzz_%,$(FUZZ_TARGETS))

fuzz: fuzz-build
	rm -rf build-fuzz/corpus && mkdir -p build-fuzz/corpus
	cp -r $(patsubst %,tests/fuzz/corpus/%,$(FUZZ_TARGETS)) build-fuzz/corpus/
	@for t in $(FUZZ_TARGETS); do \
	    echo "== fuzz_$$t, $(FUZZ_SECONDS) s"; \
	    build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	        -print_final_stats=1 build-fuzz/corpus/$$t || exit 1; \
	done

plots: $(BUILD)/sluice-sim
	sh sim/plots.sh $(BUILD)/sluice-sim doc

# The parameters' documents come from the table (decision 88): the
# manual page from its template, the README's table in place.
man: $(BUILD)/tools/params_man
	$(BUILD)/tools/params_man man doc/sluice.conf.5.in >doc/sluice.conf.5.new
	mv doc/sluice.conf.5.new doc/sluice.conf.5
	$(BUILD)/tools/params_man readme README.md >README.md.new
	mv README.md.new README.md

# make install: programs, manual pages, the configuration file (never
# over an existing one), the systemd unit and the spool directory, all
# under DESTDIR; run as root with no DESTDIR it also creates the system
# user sluice (mail_owner's default) when it is missing (decision 91).
BINDIR  ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
SPOOLDIR ?= /var/spool/sluice
AGENTDIR ?= $(PREFIX)/libexec/sluice
MAIL_OWNER ?= sluice

install: $(PROGS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(SYSCONFDIR)/sluice $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(AGENTDIR)
	install -d -m 755 $(DESTDIR)$(SPOOLDIR)
	install -m 755 $(BUILD)/sluice $(BUILD)/sluice-sim $(DESTDIR)$(BINDIR)/
	install -m 755 $(BUILD)/sluiced $(DESTDIR)$(SBINDIR)/
	ln -sf $$(realpath -m --relative-to=$(SBINDIR) $(BINDIR)/sluice) \
	    $(DESTDIR)$(SBINDIR)/sendmail
	ln -sf sluice $(DESTDIR)$(BINDIR)/mailq
	install -m 644 $(wildcard doc/*.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(wildcard doc/*.5) $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(wildcard doc/*.7) $(DESTDIR)$(MANDIR)/man7/
	install -m 755 examples/agents/maildir examples/agents/webhook \
	    $(DESTDIR)$(AGENTDIR)/
	install -m 644 $(wildcard doc/*.8) $(DESTDIR)$(MANDIR)/man8/
	[ -e $(DESTDIR)$(SYSCONFDIR)/sluice/sluice.conf ] || \
	    install -m 644 etc/sluice.conf $(DESTDIR)$(SYSCONFDIR)/sluice/sluice.conf
	sed 's|@SBINDIR@|$(SBINDIR)|g' etc/sluice.service.in \
	    >$(DESTDIR)$(UNITDIR)/sluice.service
	chmod 644 $(DESTDIR)$(UNITDIR)/sluice.service
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && \
	    ! getent passwd $(MAIL_OWNER) >/dev/null; then \
	    echo "useradd --system --user-group $(MAIL_OWNER)"; \
	    useradd --system --user-group --home-dir $(SPOOLDIR) \
	        --no-create-home --shell /usr/sbin/nologin $(MAIL_OWNER); \
	fi
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
	    chown $(MAIL_OWNER): $(SPOOLDIR); fi

format:
	clang-format -i $(wildcard src/*/*.c src/*/*.h tests/unit/*.c tests/unit/*.h \
	    tests/fuzz/*.c tests/tools/*.c bench/*.c)

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/cli/main.d $(BUILD)/obj/sim/main.d \
	$(BUILD)/obj/daemon/main.d \
	$(TESTS:=.d) $(TOOLS:=.d) $(BENCHES:=.d)
