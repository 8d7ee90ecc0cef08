# The two commands a newcomer needs (README): `make demo` and `make test`.
.PHONY: demo test unit sanity build integration molecule lint clean

demo:
	./demo.sh

test:
	tests/run

unit sanity build integration molecule lint:
	tests/run $@

clean:
	rm -rf build .venv
