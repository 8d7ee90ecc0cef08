# -*- coding: utf-8 -*-
"""Every module option that can hold a secret is no_log, and its ansible-doc says so (issue 14).

Read the way ``ansible-doc`` reads it: the module's DOCUMENTATION with its doc fragments merged
(``get_docstring``), against the argument spec that ``main()`` hands ``AnsibleModule``. An option is a secret when
its spec says ``no_log`` or its name says dsn/token/password/secret/credential (a spec that forgot
``no_log`` fails here too). The mutex lookup has no argument spec; its ``dsn`` doc is checked by name.
"""
from __future__ import annotations

import importlib
import pathlib
import re

from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.plugins.loader import fragment_loader
from ansible.utils.plugin_docs import get_docstring

REPO = pathlib.Path(__file__).resolve().parents[3]
SECRET = re.compile(r'(^|_)(dsn|token|password|passwd|secret|credentials?)$', re.I)
MODULES = sorted(p.stem for p in (REPO / 'plugins' / 'modules').glob('*.py') if not p.name.startswith('_'))


def _doc_options(path):
    doc, _plainexamples, _returndocs, _metadata = get_docstring(str(path), fragment_loader, collection_name='fleet.dispatch')
    return doc.get('options') or {}


def _walk(spec, docs, prefix=''):
    for name, opt in (spec or {}).items():
        doc = (docs or {}).get(name) or {}
        yield prefix + name, opt, doc
        yield from _walk(opt.get('options'), doc.get('suboptions'), prefix + name + '.')


def _text(doc):
    desc = doc.get('description') or ''
    return ' '.join(desc) if isinstance(desc, list) else str(desc)


class _Spec(Exception):
    pass


def _spec_of(mod):
    """The argument spec ``main()`` hands AnsibleModule (caught at the constructor, nothing else runs)."""
    def capture(self, *args, **kwargs):
        raise _Spec(kwargs.get('argument_spec') if 'argument_spec' in kwargs else args[0])
    with mock.patch.object(basic.AnsibleModule, '__init__', capture):
        try:
            mod.main()
        except _Spec as got:
            return got.args[0]
    raise AssertionError('%s.main() built no AnsibleModule' % mod.__name__)


@pytest.mark.parametrize('name', MODULES)
def test_secret_options_are_no_log_and_documented_so(name):
    mod = importlib.import_module('ansible_collections.fleet.dispatch.plugins.modules.%s' % name)
    if not hasattr(mod, 'main'):
        pytest.skip('%s is documentation for an action plugin (plugins/action), which holds no secret option' % name)
    docs = _doc_options(REPO / 'plugins' / 'modules' / ('%s.py' % name))
    spec = _spec_of(mod)
    bad = []
    for option, opt, doc in _walk(spec, docs):
        secret = opt.get('no_log') or SECRET.search(option.rsplit('.', 1)[-1])
        if not secret:
            continue
        if not opt.get('no_log'):
            bad.append('%s: the spec is not no_log' % option)
        if 'no_log' not in _text(doc):
            bad.append('%s: ansible-doc does not say no_log' % option)
    assert bad == []


def test_the_mutex_lookup_dsn_says_no_log():
    docs = _doc_options(REPO / 'plugins' / 'lookup' / 'mutex.py')
    assert 'no_log' in _text(docs['dsn'])
