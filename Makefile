# The two commands a newcomer needs (README): `make demo` and `make test`.
.PHONY: demo test unit sanity integration molecule clean

demo:
	./demo.sh

test:
	tests/run

unit sanity build integration molecule:
	tests/run $@

clean:
	rm -rf build .venv
