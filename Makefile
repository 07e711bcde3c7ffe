# The two commands of the README. Each works on a fresh machine: it installs
# what it needs (Debian packages, tox) and then runs tox.

.PHONY: test demo bench docs genconfig

test:
	bash tools/run-tests.sh

demo:
	bash tools/run-demo.sh $(ARGS)

bench:
	bash tools/bootstrap.sh && .tools/bin/tox -e bench

docs:
	bash tools/bootstrap.sh && .tools/bin/tox -e docs

genconfig:
	bash tools/bootstrap.sh && .tools/bin/tox -e genconfig
