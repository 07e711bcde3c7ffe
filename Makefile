# The commands of the README. Each works on a fresh machine: it installs
# what it needs (Debian packages, tox or the system test's environment).

.PHONY: test demo system bench docs genconfig

test:
	bash tools/run-tests.sh

demo:
	bash tools/run-demo.sh $(ARGS)

# A cloud of OpenStack processes (tools/system/): needs RabbitMQ and MariaDB
# on 127.0.0.1.
system:
	bash tools/system/run.sh

bench:
	bash tools/bootstrap.sh && .tools/bin/tox -e bench

docs:
	bash tools/bootstrap.sh && .tools/bin/tox -e docs

genconfig:
	bash tools/bootstrap.sh && .tools/bin/tox -e genconfig
