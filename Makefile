# memfloor: make deps | all | run [LISTEN=ADDR:PORT] | check | test | torch | gpu-check | sanitize | lint | bench | fuzz | docs | install | clean

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share/memfloor
MANDIR  ?= $(PREFIX)/share/man
BUILD   ?= build
CC      ?= cc

# The library needs libyaml; the fetcher of model configs adds libcurl;
# the daemon adds libmicrohttpd and GnuTLS, and the store (store/, the
# observations of design 23) SQLite and libpq (PostgreSQL's client).  The
# tests read answers back with jansson, a JSON reader not written here (in
# PKGS, for make deps).
LIBPKGS    = yaml-0.1
FETCHPKGS  = libcurl
STOREPKGS  = sqlite3 libpq
DAEMONPKGS = libmicrohttpd $(FETCHPKGS) gnutls $(STOREPKGS)
CLIPKGS    = $(FETCHPKGS)
PKGS     = libmicrohttpd yaml-0.1 jansson libcurl gnutls sqlite3 libpq
TESTPKGS = cmocka
# Debian package for each pkg-config name, in the same order.
DEBS     = libmicrohttpd-dev libyaml-dev libjansson-dev libcurl4-openssl-dev \
           libgnutls28-dev libsqlite3-dev libpq-dev
TESTDEBS = libcmocka-dev
# Programs the tests run, as command:package.
TOOLS    = python3:python3 curl:curl openssl:openssl clang-format:clang-format \
           clang:clang

WARN = -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
       -Wmissing-prototypes -Wformat=2 -Wvla
ifeq ($(CI),true)
WARN += -Werror
endif
OPT      ?= -O2 -g
# The two programs that ship (and the hello-world make bench compares them
# with) are linked with GCC's link-time optimization: the library's calls
# made in line across its files, about 3% of an admit's instructions
# (docs/performance.md).  LTO is the flag objects are compiled and the
# programs linked with; the objects carry machine code too
# (-ffat-lto-objects), from which the tests are linked as before
# (-fno-lto).  LTO= leaves it out, as the sanitizer builds do and a build
# with clang must (clang 14 refuses -ffat-lto-objects).
LTO      ?= -flto=auto
SAN      ?=
CFLAGS   += $(OPT) $(WARN) $(SAN) -pthread
LTO_CFLAGS = $(if $(LTO),$(LTO) -ffat-lto-objects)
LINK_LTO   = $(if $(LTO),-fno-lto)
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iadmission -Icatalog \
            -DMF_DATADIR='"$(DATADIR)"'
# SWAR=1: the JSON and YAML readers' portable loops alone, without SSE2
# (make sanitize tests them so).
SWAR_FLAGS = $(if $(SWAR),-DMF_DOC_SWAR)
CPPFLAGS += $(SWAR_FLAGS)
# Expanded when a recipe runs, after the deps stamp exists.  Each object
# is compiled with the flags of the packages its layer may use (MODPKGS).
MODPKGS     = $(LIBPKGS)
MOD_CFLAGS  = $(shell pkg-config --cflags $(MODPKGS))
PKG_CFLAGS  = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS    = $(shell pkg-config --libs $(PKGS))
LIB_LIBS    = $(shell pkg-config --libs $(LIBPKGS)) -lm
DAEMON_LIBS = $(shell pkg-config --libs $(LIBPKGS) $(DAEMONPKGS)) -lm
CLI_LIBS    = $(shell pkg-config --libs $(LIBPKGS) $(CLIPKGS)) -lm
TEST_CFLAGS = $(shell pkg-config --cflags $(TESTPKGS))
TEST_LIBS   = $(shell pkg-config --libs $(TESTPKGS))
LDLIBS   = $(PKG_LIBS) -lm

# The library's modules, one folder of admission/ each, lowest first
# (HACKING.md, The layers); a new module's folder is built once it is named
# here.
MODULES    = base doc fields model estimate time fix manifest fingerprint \
             place oom answer review
LIB_SRC    = $(wildcard admission/*.c $(MODULES:%=admission/%/*.c) catalog/*.c)
LIB_OBJ    = $(LIB_SRC:%.c=$(BUILD)/%.o)
FETCH_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(wildcard fetch/*.c))
STORE_OBJ  = $(patsubst %.c,$(BUILD)/%.o,$(wildcard store/*.c))
DAEMON_OBJ = $(patsubst %.c,$(BUILD)/%.o,$(filter-out daemon/main.c,$(wildcard daemon/*.c)))
CLI_OBJ    = $(patsubst %.c,$(BUILD)/%.o,$(wildcard cli/*.c))
HARNESS_OBJ = $(BUILD)/tests/integration/harness.o
FILTER_OBJ = $(BUILD)/tests/lib/filter.o
SCRIPTS    = $(wildcard tests/integration/*.sh)
UNIT       = $(patsubst tests/unit/%.c,$(BUILD)/%,$(wildcard tests/unit/test_*.c))
INTEG      = $(patsubst tests/integration/%.c,$(BUILD)/%,$(wildcard tests/integration/it_*.c))
LIB        = $(BUILD)/libmemfloor.a
FLIB       = $(BUILD)/libmffetch.a
SLIB       = $(BUILD)/libmfstore.a
DLIB       = $(BUILD)/libmemfloord.a
FUZZ       = $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
DEPSTAMP   = $(BUILD)/.deps

.PHONY: all deps run check suite test unit integration sanitize lint bench fuzz docs install clean tsan torch gpu-check FORCE
.DELETE_ON_ERROR:
.SECONDARY:

PROGRAMS   = $(BUILD)/memfloord $(if $(CLI_OBJ),$(BUILD)/memfloor)
$(PROGRAMS) $(BUILD)/bench_hello: LINK_LTO = $(LTO)

all: $(PROGRAMS)

deps: $(DEPSTAMP)

# Install what pkg-config cannot find: with apt-get as root, else say how.
$(DEPSTAMP):
	@missing=""; set -- $(DEBS) $(TESTDEBS); \
	for p in $(PKGS) $(TESTPKGS); do \
	  pkg-config --exists $$p 2>/dev/null || missing="$$missing $$1"; shift; \
	done; \
	command -v pkg-config >/dev/null || missing="pkg-config $$missing"; \
	for t in $(TOOLS); do \
	  command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "deps: installing$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends pkg-config $$missing) \
	      >/dev/null || exit 1; \
	  else \
	    echo "deps: missing:$$missing"; \
	    echo "deps: run: sudo apt-get install pkg-config$$missing"; exit 1; \
	  fi; \
	fi
	@mkdir -p $(@D) && touch $@

$(BUILD)/fetch/%.o: MODPKGS = $(LIBPKGS) $(FETCHPKGS)
$(BUILD)/store/%.o: MODPKGS = $(LIBPKGS) $(STOREPKGS)
$(BUILD)/daemon/%.o: MODPKGS = $(LIBPKGS) $(DAEMONPKGS)
$(BUILD)/cli/%.o: MODPKGS = $(LIBPKGS) $(CLIPKGS)
$(BUILD)/tests/%.o: MODPKGS = $(PKGS) $(TESTPKGS)
$(BUILD)/tests/%.o: CPPFLAGS += -Itests/lib -Idaemon -Ifetch -Istore

$(BUILD)/%.o: %.c $(BUILD)/.cflags | $(DEPSTAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LTO_CFLAGS) $(MOD_CFLAGS) -MMD -MP -c -o $@ $<

# A stamp holds a setting's text and is written only when the text
# changes, so what depends on it is built again then and only then.  Every
# object is compiled again when what changes its code does (CC=, OPT=,
# SAN=, LTO=, SWAR=); the data directory is compiled into three.
$(BUILD)/.cflags: STAMP = $(CC) $(OPT) $(SAN) $(LTO_CFLAGS) $(SWAR_FLAGS)
$(BUILD)/.datadir: STAMP = $(DATADIR)
$(BUILD)/.cflags $(BUILD)/.datadir: FORCE | $(DEPSTAMP)
	@echo '$(STAMP)' | cmp -s - $@ || echo '$(STAMP)' > $@
$(BUILD)/daemon/main.o $(BUILD)/cli/memfloor.o $(BUILD)/catalog/datadir.o: $(BUILD)/.datadir
# The version both programs print (--version) is the VERSION file's.
VERSION := $(shell cat VERSION)
$(BUILD)/daemon/main.o $(BUILD)/cli/memfloor.o: VERSION
$(BUILD)/daemon/main.o $(BUILD)/cli/memfloor.o: \
  CPPFLAGS += -DMF_VERSION='"$(VERSION)"'
# The page's files are assembled into page.o (.incbin).
$(BUILD)/daemon/page.o: $(wildcard web/*)
FORCE:

$(LIB): $(LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(FLIB): $(FETCH_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(SLIB): $(STORE_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(DLIB): $(DAEMON_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/memfloord: $(BUILD)/daemon/main.o $(DLIB) $(SLIB) $(FLIB) $(LIB)
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(DAEMON_LIBS)

# The command line fetches a configUrl with the fetcher the daemon uses.
$(BUILD)/memfloor: $(CLI_OBJ) $(FLIB) $(LIB)
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(CLI_LIBS)

$(BUILD)/test_%: $(BUILD)/tests/unit/test_%.o $(FILTER_OBJ) $(DLIB) $(SLIB) \
    $(FLIB) $(LIB)
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(TEST_LDFLAGS) $(LDLIBS) $(TEST_LIBS)

# test_api fails allocations one by one: it counts them itself.
$(BUILD)/test_api: TEST_LDFLAGS = \
  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free

$(BUILD)/it_%: $(BUILD)/tests/integration/it_%.o $(HARNESS_OBJ) $(FILTER_OBJ) \
    $(DLIB) $(SLIB) $(FLIB) $(LIB)
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(LDLIBS) $(TEST_LIBS)

# A PostgreSQL transaction lost with its connection (postgres.sh runs it).
PG_TX = $(BUILD)/pg_tx
$(PG_TX): $(BUILD)/tests/integration/pg_tx.o $(SLIB) $(LIB)
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(LDLIBS)

$(BUILD)/bench_%: $(BUILD)/tests/bench/bench_%.o $(LIB)
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(LIB_LIBS)

# libmicrohttpd's hello-world, built with the daemon's flags: the floor
# make bench measures memfloord's requests against.
$(BUILD)/bench_hello: $(BUILD)/tests/bench/bench_hello.o
	$(CC) $(CFLAGS) $(LINK_LTO) -o $@ $^ $(shell pkg-config --libs libmicrohttpd)

# make run LISTEN=0.0.0.0:9090 listens elsewhere.  Observations (design
# 23) are kept in $(BUILD)/memfloor.db; writing them takes the token in
# $(BUILD)/observe-token, made (random, mode 0600) when there is none.
LISTEN ?= 127.0.0.1:8080
OBSERVE_TOKEN = $(BUILD)/observe-token
run: all
	@[ -s $(OBSERVE_TOKEN) ] || (umask 077 && \
	  od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > $(OBSERVE_TOKEN) && \
	  echo >> $(OBSERVE_TOKEN))
	@echo "run: observations take 'Authorization: Bearer $$(cat $(OBSERVE_TOKEN))' ($(OBSERVE_TOKEN))"
	$(BUILD)/memfloord -d -l $(LISTEN) -f catalog/gpus.yaml -m catalog/models \
	  --store $(BUILD)/memfloor.db --observe-token-file $(OBSERVE_TOKEN)

# Integration tests find the programs through MEMFLOORD / MEMFLOOR, the
# shipped data through MF_TOP and the Python venv of the full tier's
# validators through MF_VENV.
VENV    = build/venv
TESTENV = MEMFLOORD=$(abspath $(BUILD)/memfloord) \
          MEMFLOOR=$(abspath $(BUILD)/memfloor) MF_TOP=$(CURDIR) \
          MF_PG_TX=$(abspath $(PG_TX)) \
          MF_VENV=$(abspath $(VENV))

# The JSON Schema validator tests/integration/schema.sh runs (make suite):
# a venv of python3's with tests/requirements-schema.txt, pinned.
$(VENV)/.installed: tests/requirements-schema.txt
	rm -rf $(VENV) && python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check \
	  -r tests/requirements-schema.txt
	touch $@

# The fast tier: the unit tests and the integration tests against the real
# daemon, without package installs, torch, sanitizers or fuzzing.  T=NAME
# runs one program or script (T=test_place, T=it_admit, T=cli), T=NAME:CASE
# the cmocka cases matching CASE (T='test_place:test_place_tie*').
check: all $(UNIT) $(INTEG)
	@$(TESTENV) MF_NO_INSTALL=1 sh tests/lib/run.sh $(BUILD) fast $(T)

# Every unit and integration test, with those that install and start
# components of their own (chromium for the page, a Slurm cluster).
suite: all $(UNIT) $(INTEG) $(PG_TX) $(VENV)/.installed
	@$(TESTENV) sh tests/lib/run.sh $(BUILD) full

unit: $(UNIT)
	@$(TESTENV) sh tests/lib/run.sh $(BUILD) full $(notdir $(UNIT))

integration: all $(INTEG) $(PG_TX) $(VENV)/.installed
	@$(TESTENV) sh tests/lib/run.sh $(BUILD) full $(notdir $(INTEG)) \
	  $(notdir $(SCRIPTS))

# The whole suite, the estimator against PyTorch, again under ASan+UBSan,
# a short fuzz pass, the integration tests against a ThreadSanitizer
# daemon, the lint.
test: suite
	$(MAKE) --no-print-directory torch
	$(MAKE) --no-print-directory sanitize
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5
	$(MAKE) --no-print-directory tsan
	$(MAKE) --no-print-directory lint

# The JSON reader's loops without SSE2 are the ones this build tests.
sanitize:
	$(MAKE) --no-print-directory BUILD=build/asan OPT="-O1 -g" LTO= SWAR=1 \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  suite

# The integration tests against a ThreadSanitizer build (about a minute;
# clang comes with the fuzz target's dependencies).
tsan:
	sh tests/lib/tsan.sh

# The estimator pytorch against what PyTorch 2 and the frameworks' own
# modules keep (tests/torch/measure.py: transformers, peft, torchtune on
# the CPU, a few minutes on two cores), torchtune's chunked loss over
# transformers' models (tests/torch/loss.py, under a minute), LitGPT's
# loop over Lightning Fabric's fp32 output (tests/torch/loss16.py, under a
# minute), Liger-Kernel's
# fused linear cross-entropy over them (tests/torch/fused.py, under a
# minute), a serving
# engine's forward peak against the activations of a vllm inference job's
# estimate (tests/torch/forward.py, under a minute), 4-bit storage on
# bitsandbytes' own modules (tests/torch/quant.py, under a minute), and
# tensor parallel and FSDP against what DTensor and fully_shard keep on
# each rank (tests/torch/dist.py: gloo, 2 and 4 CPU processes, about two
# minutes), the optimizer in backward with torchtune's own hooks
# (tests/torch/optim_bwd.py, about a minute), and activation offloading
# against what torchtune's own OffloadActivations leaves on a simulated
# device (tests/torch/offload.py, about a minute), and the time model's
# matmul FLOPs against FlopCounterMode on the same models (tests/torch/
# flops.py, two minutes) and its other kernels' bytes and count against
# what a dispatch mode sees them move (tests/torch/traffic.py, ten
# minutes on two cores), QLoRA's loading moment against transformers' own
# from_pretrained with bitsandbytes and PEFT's fp32 cast, the checkpoint
# counted as host memory and its copies as the GPU's (tests/torch/
# loading.py, seconds), and torchao's float8 linears against the estimate
# with workload.float8 (tests/torch/float8.py, under a minute), and LoRA's
# input dropout on PEFT's adapters with the GPU's fused dropout
# (tests/torch/dropout.py, seconds), and torchtune's chunked loss with its
# cross-entropy compiled as compile_loss compiles it, beside compiled
# layers (tests/torch/compile_loss.py, a few minutes), and make gpu-check's
# two scripts at a small size on the CPU (their code, not memory or
# speed: seconds); all ask the command line.
# They run in a virtual environment of the pinned packages of
# tests/torch/requirements.txt, made with TORCH_PYTHON: the python3 on
# PATH, which is Python 3.11 on purpose (torch 2.13.0's CPU wheel is
# cp311; Debian's /usr/bin/python3 is another interpreter), and rebuilt
# when the requirements change.  pip finds torch in TORCH_WHEELS when that
# directory exists (any other torch request downloads a CUDA build).  A
# failed install stops make torch and leaves no environment behind.
TORCH_PYTHON ?= python3
TORCH_REQ     = tests/torch/requirements.txt
TORCH_VENV    = $(BUILD)/torch-venv
TORCH_PY      = $(TORCH_VENV)/bin/python
TORCH_WHEELS ?= /opt/wheels
$(TORCH_VENV)/.installed: $(TORCH_REQ)
	@rm -rf $(TORCH_VENV)
	@$(TORCH_PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	  { echo "torch: $(TORCH_PYTHON) is not Python 3.11"; exit 1; }
	@echo "torch: installing $(TORCH_REQ) into $(TORCH_VENV)"
	@$(TORCH_PYTHON) -m venv $(TORCH_VENV) || \
	  { echo "torch: $(TORCH_PYTHON) -m venv failed"; rm -rf $(TORCH_VENV); exit 1; }
	@$(if $(wildcard $(TORCH_WHEELS)),PIP_FIND_LINKS=$(TORCH_WHEELS)) \
	  $(TORCH_PY) -m pip install --disable-pip-version-check -qq \
	  -r $(TORCH_REQ) || { echo "torch: pip install -r $(TORCH_REQ) failed"; \
	  rm -rf $(TORCH_VENV); exit 1; }
	@touch $@

torch: all $(TORCH_VENV)/.installed
	$(TESTENV) timeout 1200 $(TORCH_PY) tests/torch/measure.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/loss.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/loss16.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/fused.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/forward.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/quant.py
	$(TESTENV) timeout 600 $(TORCH_PY) tests/torch/dist.py
	$(TESTENV) timeout 600 $(TORCH_PY) tests/torch/optim_bwd.py
	$(TESTENV) timeout 600 $(TORCH_PY) tests/torch/offload.py
	$(TESTENV) timeout 600 $(TORCH_PY) tests/torch/flops.py
	$(TESTENV) timeout 1200 $(TORCH_PY) tests/torch/traffic.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/framework.py
	$(TESTENV) timeout 600 $(TORCH_PY) tests/torch/compile.py
	$(TESTENV) timeout 900 $(TORCH_PY) tests/torch/compile_lora.py
	$(TESTENV) timeout 900 $(TORCH_PY) tests/torch/compile_loss.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/loading.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/float8.py
	$(TESTENV) timeout 300 $(TORCH_PY) tests/torch/dropout.py
	$(TESTENV) MF_GPU_CHECK_DEVICE=cpu timeout 300 $(TORCH_PY) tests/torch/gpu_check.py
	$(TESTENV) MF_GPU_CHECK_DEVICE=cpu timeout 300 $(TORCH_PY) tests/torch/gpu_speed.py

# The field lists of docs/manifest.md and docs/catalog.md, from the table
# of fields (the Job's rows in admission/manifest/job_fields.c, the
# catalogue's in catalog/catalog_fields.c); tests/integration/docs.sh
# checks them.
docs: $(BUILD)/memfloor
	$(TESTENV) python3 tests/lib/docfields.py $(BUILD)/memfloor --write

# The harness's recipes on a CUDA GPU, not part of make test, a few minutes
# on one H100/H200-class GPU: tests/torch/gpu_check.py prints measured
# (torch.cuda's allocator counters) against estimated per bucket and the
# reserved/allocated ratio; tests/torch/gpu_speed.py times Llama 3.1 8B's
# training steps against memfloor's modelled step on that card.  They run
# with the system python3 when its torch sees a GPU (the environment's
# packages behind it), else with the environment's python, which says
# there is no GPU and fails.
gpu-check: all $(TORCH_VENV)/.installed
	@if python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' \
	  2>/dev/null; then py=python3; else py=$(TORCH_PY); fi; \
	site=$$($(TORCH_PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	$(TESTENV) MF_TORCH_SITE=$$site timeout 900 $$py tests/torch/gpu_check.py && \
	$(TESTENV) MF_TORCH_SITE=$$site timeout 600 $$py tests/torch/gpu_speed.py

bench: all $(BUILD)/bench_place $(BUILD)/bench_hello
	$(TESTENV) BENCH_PLACE=$(abspath $(BUILD)/bench_place) \
	  BENCH_HELLO=$(abspath $(BUILD)/bench_hello) sh tests/bench/bench.sh

# libFuzzer harnesses, built with clang against the library's sources.
# Each runs FUZZ_SECONDS from its seed corpus: tests/fuzz/corpus/NAME (read
# only) and the inputs the tree already holds (examples, test data, the
# shipped catalogue and models), copied in rather than kept twice; what it
# finds lands in build/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_FLAGS    = -g -O1 -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=all $(CPPFLAGS) -Itests/lib -Idaemon \
                -Ifetch -Istore -std=c11
fuzz: $(DEPSTAMP)
	@echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)' \
	  '{ (void)d; (void)n; return 0; }' > build/fuzzcheck.c
	@$(FUZZ_CC) -fsanitize=fuzzer -o build/fuzzcheck build/fuzzcheck.c \
	  2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "fuzz: installing clang and libFuzzer"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends clang libclang-rt-dev >/dev/null; \
	  else \
	    echo "fuzz: needs clang with libFuzzer:" \
	      "sudo apt-get install clang libclang-rt-dev"; exit 1; \
	  fi; }
	@mkdir -p build/fuzz
	@set -e; for f in $(FUZZ); do \
	  echo "== $$f ($(FUZZ_SECONDS) s)"; \
	  $(FUZZ_CC) $(FUZZ_FLAGS) $(PKG_CFLAGS) -o build/fuzz/$$f tests/fuzz/$$f.c \
	    $(LIB_SRC) $(wildcard fetch/*.c) $(wildcard store/*.c) \
	    $(filter-out daemon/main.c,$(wildcard daemon/*.c)) \
	    $(PKG_LIBS) -lm -pthread; \
	  name=$${f#fuzz_}; mkdir -p build/fuzz/$$name; \
	  case $$name in \
	  catalog) seeds="tests/data/catalog/* catalog/gpus.yaml" ;; \
	  manifest) seeds="examples/*.yaml tests/data/unit/*" ;; \
	  model) seeds="catalog/models/*/*.json tests/data/fetch/*" ;; \
	  oom) seeds="examples/*.txt tests/data/oom/*" ;; \
	  review) seeds="tests/data/review/* examples/*.json" ;; \
	  yaml) seeds="examples/*.yaml tests/data/unit/*.yaml \
	    tests/data/catalog/*.yaml catalog/gpus.yaml \
	    tests/fuzz/corpus/manifest/*.yaml tests/fuzz/corpus/catalog/*.yaml" ;; \
	  *) seeds="" ;; \
	  esac; \
	  for s in $$seeds; do cp "$$s" build/fuzz/$$name/; done; \
	  build/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -artifact_prefix=build/fuzz/$$name- build/fuzz/$$name \
	    tests/fuzz/corpus/$$name >build/fuzz/$$name.log 2>&1 || \
	    { tail -30 build/fuzz/$$name.log; exit 1; }; \
	  tail -1 build/fuzz/$$name.log; \
	done

PRODUCT = $(wildcard admission/*.[ch] $(MODULES:%=admission/%/*.[ch]) \
            catalog/*.[ch] fetch/*.[ch] store/*.[ch] daemon/*.[ch] cli/*.c)
SOURCES = $(PRODUCT) $(wildcard tests/*/*.[ch])
# clang-format, the banned calls, the layers' include rules, no include
# cycle and no product file over 1,200 lines (tests/lib/layers.py), and an
# assert or a bound check before every index into a fixed-size array
# (tests/lib/bounds.py, through clang's syntax tree; first against
# tests/data/lint/bounds.c, what it must refuse).
lint:
	clang-format --dry-run --Werror --style=file $(SOURCES)
	@! grep -nE '\b(sprintf|strcpy|strcat|strtok|atoi|gets)\s*\(' \
	  $(SOURCES) || { echo "lint: banned call"; exit 1; }
	@python3 tests/lib/layers.py
	@python3 tests/lib/bounds.py --expect tests/data/lint/bounds.c
	@python3 tests/lib/bounds.py $(filter %.c,$(PRODUCT)) -- \
	  $(CPPFLAGS) -DMF_VERSION='""' $(PKG_CFLAGS)

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/models
	install -m 755 $(BUILD)/memfloord $(DESTDIR)$(SBINDIR)/memfloord
	install -m 755 $(BUILD)/memfloor $(DESTDIR)$(BINDIR)/memfloor
	install -m 644 catalog/gpus.yaml $(DESTDIR)$(DATADIR)/gpus.yaml
	cp -R catalog/models/. $(DESTDIR)$(DATADIR)/models/
	install -d $(DESTDIR)$(DATADIR)/slurm
	install -m 644 slurm/cli_filter.lua slurm/job_submit.lua $(DESTDIR)$(DATADIR)/slurm/
	@for m in man/*.[0-9]; do [ -e "$$m" ] || continue; s=$${m##*.}; \
	  install -d $(DESTDIR)$(MANDIR)/man$$s; \
	  install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
