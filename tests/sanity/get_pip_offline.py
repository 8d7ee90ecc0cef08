"""Stand-in for pip's get-pip.py bootstrap script, for ansible-test on machines without internet.

ansible-test bootstraps pip into each of its sanity venvs by downloading get-pip.py from a CI
file server that these machines cannot reach (only the package registries are). It looks for a
cached copy at ~/.ansible/test/cache/get_pip_<version>.py first; tests/run installs this file
there. It does what get-pip.py does, from parts that are reachable: pip from the standard
library's bundled wheel (ensurepip), then `pip install <the same arguments>` from the package
registry, so the requested pip version is what ends up in the venv.
"""
import ensurepip
import os
import runpy
import sys

# get-pip.py's own flags (it would otherwise also install setuptools and wheel); pip has no such options
OWN_FLAGS = ('--no-setuptools', '--no-wheel')

# ensurepip points PIP_CONFIG_FILE at /dev/null for its own run; the real install must see the
# machine's pip configuration (its CA bundle and index settings), so restore the environment
saved = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
os.environ.clear()
os.environ.update(saved)
sys.argv = ['pip', 'install'] + [arg for arg in sys.argv[1:] if arg not in OWN_FLAGS]
runpy.run_module('pip', run_name='__main__', alter_sys=True)
