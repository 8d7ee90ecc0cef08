# The two commands a newcomer needs (README): `make demo` and `make test`.
.PHONY: demo test unit sanity build integration molecule lint ee docs cores eda clean

demo:
	./demo.sh

test:
	tests/run

unit sanity build integration molecule lint ee docs cores eda:
	tests/run $@

clean:
	rm -rf build .venv
