# -*- coding: utf-8 -*-
"""The rulebooks by their schemas (issue 16): they hold even where ansible-rulebook cannot run.

* each file validates against ansible-rulebook's own ruleset schema, and its rules parse with
  ansible-rulebook's own condition parser (a condition typo fails here, not at the first event);
* the webhook source's arguments, rendered with sample variables, are the source's documented
  options (the local rulebook's ``eda.builtin.webhook`` ships in ansible-rulebook: its DOCUMENTATION;
  the AWX rulebook's ``ansible.eda.webhook``: its argument schema, where ansible.eda is installed),
  and HMAC-SHA256 on X-Hub-Signature-256 is switched on, with the secret from the environment only;
* every rule runs the hand dispatch of the item the event names (or the sweep for a board edit),
  locally (run_playbook) or in AWX (run_job_template) -- no rule launches anything else.
"""
from __future__ import annotations

import ast
import json
import pathlib

import jinja2
import jsonschema
import pytest
import yaml

import ansible_rulebook
from ansible_rulebook import rules_parser
from ansible_rulebook.validators import Validate
from eda_paths import eda_root

REPO = pathlib.Path(__file__).resolve().parents[2]
RULEBOOKS = sorted((REPO / 'extensions' / 'eda' / 'rulebooks').glob('*.yml'))

LOCAL, AWX = 'webhook_dispatch.yml', 'webhook_dispatch_awx.yml'
# the local rulebook runs ansible-rulebook's own webhook source (no collection: tested live here);
# the AWX one ansible.eda's, which an EDA controller's decision environment ships
SOURCE = {LOCAL: 'eda.builtin.webhook', AWX: 'ansible.eda.webhook'}


def builtin_options(name):
    """The documented options of one of ansible-rulebook's builtin sources: {name: spec}."""
    path = pathlib.Path(ansible_rulebook.__file__).parent / 'event_source' / ('%s.py' % name)
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ['DOCUMENTATION']:
            return yaml.safe_load(node.value.value)['options']
    raise AssertionError('no DOCUMENTATION in %s' % path)


def test_both_rulebooks_are_there():
    assert sorted(p.name for p in RULEBOOKS) == [LOCAL, AWX]


@pytest.mark.parametrize('path', RULEBOOKS, ids=lambda p: p.name)
def test_rulebook_validates_and_parses(path):
    data = yaml.safe_load(path.read_text())
    Validate.rulebook(data)  # ansible-rulebook's ruleset_schema.json
    rulesets = rules_parser.parse_rule_sets(data)
    assert [len(rs.rules) for rs in rulesets] == [6]


@pytest.mark.parametrize('path', RULEBOOKS, ids=lambda p: p.name)
def test_webhook_source_verifies_github_signatures(path):
    (ruleset,) = yaml.safe_load(path.read_text())
    (source,) = ruleset['sources']
    assert list(source) == ['name', SOURCE[path.name]]
    args = source[SOURCE[path.name]]
    assert (args['hmac_algo'], args['hmac_header'], args['hmac_format']) == ('sha256', 'x-hub-signature-256', 'hex')
    strict = jinja2.Environment(undefined=jinja2.StrictUndefined)
    sample = {'fleet_webhook_port': 5000, 'FLEET_WEBHOOK_SECRET': 'not-a-secret-but-long-enough'}
    rendered = dict((k, strict.from_string(v).render(**sample) if isinstance(v, str) else v) for k, v in args.items())
    rendered['port'] = int(rendered['port'])
    # the secret comes from --env-vars only, and an empty or short one is refused by name
    assert rendered['host'] == '0.0.0.0' and rendered['hmac_secret'] == 'not-a-secret-but-long-enough'
    for weak in ('', 'short'):
        with pytest.raises(jinja2.UndefinedError, match='FLEET_WEBHOOK_SECRET_MUST_BE_AT_LEAST_16_CHARACTERS'):
            strict.from_string(args['hmac_secret']).render(**dict(sample, FLEET_WEBHOOK_SECRET=weak))
    if SOURCE[path.name].startswith('eda.builtin.'):
        options = builtin_options(SOURCE[path.name].split('.')[-1])
        assert set(rendered) <= set(options), set(rendered) - set(options)
        assert all(k in rendered for k, spec in options.items() if spec.get('required'))
        assert options['hmac_format']['choices'] == ['hex', 'base64'] and options['hmac_header']['default'] == 'x-hub-signature-256'
        return
    root = eda_root()
    if root is not None:    # the source's own argument schema, where ansible.eda is installed
        schema = root / 'ansible_collections' / 'ansible' / 'eda' / 'extensions' / 'eda' / 'plugins' / 'event_source'
        for path_ in sorted(schema.glob('schemas/webhook.json')):
            jsonschema.validate(rendered, json.loads(path_.read_text()))


@pytest.mark.parametrize('path,action,dispatch,sweep', [
    (LOCAL, 'run_playbook', 'fleet.dispatch.dispatch', 'fleet.dispatch.sweep'),
    (AWX, 'run_job_template', 'fleet dispatch', 'fleet sweep'),
])
def test_every_rule_runs_the_shared_dispatch_path(path, action, dispatch, sweep):
    (ruleset,) = yaml.safe_load((RULEBOOKS[0].parent / path).read_text())
    rules = {r['name']: r for r in ruleset['rules']}
    targets = dict((name, r['action'][action]['name']) for name, r in rules.items())
    assert targets == {
        'An issue opened, reopened or labelled': dispatch,
        'A comment on an issue': dispatch,
        'A review on a pull request': dispatch,
        'A check suite failed on a pull request': dispatch,
        'A check run failed on a pull request': dispatch,
        "A project item's status edited": sweep,
    }

    def extra_vars(name):
        args = rules[name]['action'][action]
        return args['extra_vars'] if action == 'run_playbook' else args['job_args']['extra_vars']
    for name in ('An issue opened, reopened or labelled', 'A comment on an issue'):
        extra = extra_vars(name)
        assert extra['issue'] == '{{ event.payload.issue.number }}'
        assert 'X-GitHub-Delivery' in extra['delivery']           # a replayed delivery is refused (roles/dispatch)
        assert rules[name]['throttle'] == {'once_within': '1 minute', 'group_by_attributes': ['event.payload.issue.number']}
        assert '["OWNER", "COLLABORATOR"]' in rules[name]['condition'] and 'MEMBER' not in rules[name]['condition']
    assert rules["A project item's status edited"]['throttle']['once_after'] == '1 minute'
    # a pull request's review or failing check: the hand dispatch of the item whose next run continues it
    review = rules['A review on a pull request']
    assert extra_vars('A review on a pull request')['pull_request'] == (
        '{{ event.payload.repository.full_name }}#{{ event.payload.pull_request.number }}')
    assert '["OWNER", "COLLABORATOR"]' in review['condition'] and 'MEMBER' not in review['condition'] and '"approved"' not in review['condition']
    assert review['throttle']['group_by_attributes'] == ['event.payload.pull_request.number']
    for name, what in (('A check suite failed on a pull request', 'check_suite'), ('A check run failed on a pull request', 'check_run')):
        extra = extra_vars(name)
        assert 'issue' not in extra and 'X-GitHub-Delivery' in extra['delivery']
        assert 'event.payload.%s.pull_requests' % what in extra['pull_request']
        assert '"success"' not in rules[name]['condition'] and '"failure"' in rules[name]['condition']
        assert rules[name]['throttle'] == {'once_within': '1 minute', 'group_by_attributes': ['event.payload.%s.head_sha' % what]}


@pytest.mark.parametrize('payload, ref', [
    ({'repository': {'full_name': 'o/r'}, 'pull_request': {'number': 7}}, 'o/r#7'),
    ({'repository': {'full_name': 'o/r'}, 'check_suite': {'pull_requests': [{'number': 8}, {'number': 9}]}}, 'o/r#8'),
    ({'repository': {'full_name': 'o/r'}, 'check_run': {'pull_requests': []}}, 'o/r#'),   # a fork's head: refused by name
])
def test_a_pull_request_event_renders_the_pull_request_the_hand_dispatch_reads(payload, ref):
    (ruleset,) = yaml.safe_load((RULEBOOKS[0].parent / LOCAL).read_text())
    what = 'pull_request' if 'pull_request' in payload else next(k for k in payload if k.startswith('check_'))
    name = {'pull_request': 'A review on a pull request', 'check_suite': 'A check suite failed on a pull request',
            'check_run': 'A check run failed on a pull request'}[what]
    (rule,) = [r for r in ruleset['rules'] if r['name'] == name]
    template = rule['action']['run_playbook']['extra_vars']['pull_request']
    assert jinja2.Environment().from_string(template).render(event={'payload': payload}) == ref


def test_the_awx_rulebook_has_the_local_ones_conditions():
    local, awx = ([r['condition'] for r in yaml.safe_load((RULEBOOKS[0].parent / f).read_text())[0]['rules']]
                  for f in (LOCAL, AWX))
    assert local == awx
