# The two commands a newcomer needs (README): `make demo` and `make test`; `make check` is the
# fast tier a contributor runs before every commit (CONTRIBUTING.md).
.PHONY: demo test check unit sanity build integration molecule lint ee docs cores eda clean

demo:
	./demo.sh

test:
	tests/run

check:
	tests/run check

unit sanity build integration molecule lint ee docs cores eda:
	tests/run $@

clean:
	rm -rf build .venv
