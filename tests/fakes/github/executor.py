# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Execute GraphQL documents with graphql-core against GitHub's public schema and a ``Store``.

The schema is read from ``../shared/github-schema/schema.graphql`` (never copied into the
repository) and built with ``assume_valid=True`` (see that directory's PROVENANCE.md). Documents
are validated by graphql-core, then checked against GitHub's own limits and priced by
``cost.analyse`` before anything runs, as GitHub does.
"""

from __future__ import annotations

import base64
import functools
import pathlib
import re
from typing import Any, Dict, List, Optional

import graphql
from graphql import GraphQLError

from . import cost as _cost

SCHEMA_PATH = pathlib.Path(__file__).resolve().parents[3].parent / 'shared' / 'github-schema' / 'schema.graphql'


@functools.lru_cache(maxsize=4)
def load_schema(path: Optional[str] = None):
    """GitHub's schema, built once per process (about 3 s)."""
    sdl = pathlib.Path(path or SCHEMA_PATH).read_text(encoding='utf-8')
    return graphql.build_schema(sdl, assume_valid=True)


def _error(message: str, kind: str) -> GraphQLError:
    return GraphQLError(message, extensions={'type': kind})


# -- connections --------------------------------------------------------------------------------

def _cursor(index: int) -> str:
    return base64.b64encode(('cursor:%d' % index).encode()).decode()


def _index(cursor: Optional[str]) -> Optional[int]:
    if cursor is None:
        return None
    try:
        return int(base64.b64decode(cursor.encode()).decode().split(':', 1)[1])
    except Exception:
        raise _error('`%s` does not appear to be a valid cursor.' % cursor, 'INVALID_CURSOR_ARGUMENTS')


def connection(seq: List[Any], first=None, last=None, after=None, before=None, **_ignored) -> Dict[str, Any]:
    """A Relay connection over ``seq`` with GitHub's paging semantics."""
    indexed = list(enumerate(seq))
    a, b = _index(after), _index(before)
    if a is not None:
        indexed = [p for p in indexed if p[0] > a]
    if b is not None:
        indexed = [p for p in indexed if p[0] < b]
    window = indexed
    if first is not None:
        window = window[:first]
    if last is not None:
        window = window[-last:] if last else []
    has_next = bool(window) and window[-1][0] < (indexed[-1][0] if indexed else -1)
    has_prev = bool(window) and window[0][0] > (indexed[0][0] if indexed else 0)
    return {
        'totalCount': len(seq),
        'nodes': [v for _i, v in window],
        'edges': [{'node': v, 'cursor': _cursor(i)} for i, v in window],
        'pageInfo': {'hasNextPage': has_next, 'hasPreviousPage': has_prev,
                     'startCursor': _cursor(window[0][0]) if window else None,
                     'endCursor': _cursor(window[-1][0]) if window else None},
    }


# -- the project filter (items(query:)) ---------------------------------------------------------

_VALUE = r'(?:"[^"]*"|[^\s,"]+)'
_TOKEN = re.compile(r'(-?)(?:("[^"]*"|[^\s:"]+):(%s(?:,%s)*)|("[^"]*"|\S+))' % (_VALUE, _VALUE))


def parse_filter(text: str) -> List[tuple]:
    """``is:issue is:open status:Ready -label:x "in progress"`` -> [(negated, key, [values])]."""
    out = []
    for m in _TOKEN.finditer(text or ''):
        neg = m.group(1) == '-'
        if m.group(2) is not None:
            key = m.group(2).strip('"').lower()
            values = [v.strip('"') for v in re.findall(_VALUE, m.group(3))]
            out.append((neg, key, values))
        else:
            out.append((neg, None, [m.group(4).strip('"')]))
    return out


def _status_name(item: Dict[str, Any], field: Dict[str, Any]) -> Optional[str]:
    oid = item['values'].get(field['id'])
    for option in field['options']:
        if option['id'] == oid:
            return option['name']
    return None


def item_matches(item: Dict[str, Any], terms: List[tuple]) -> bool:
    content = item.get('content') or {}
    fields = dict((f['name'].lower(), f) for f in item['project']['fields'])
    fields.update(dict((f['name'].lower().replace(' ', '-'), f) for f in item['project']['fields']))
    for neg, key, values in terms:
        if key is None:
            hit = values[0].lower() in (content.get('title') or '').lower()
        elif key == 'is':
            checks = []
            for v in values:
                v = v.lower()
                if v in ('open', 'closed'):
                    checks.append(content.get('state', 'OPEN').lower() == v)
                elif v == 'issue':
                    checks.append(item['type'] == 'ISSUE')
                elif v == 'pr':
                    checks.append(item['type'] == 'PULL_REQUEST')
                elif v == 'draft':
                    checks.append(item['type'] == 'DRAFT_ISSUE')
                elif v == 'archived':
                    checks.append(item['isArchived'])
                elif v == 'blocked':
                    # GitHub's is:blocked: an issue with an open blocker
                    checks.append(any(b['state'] == 'OPEN' for b in content.get('blocked_by') or []))
                else:
                    checks.append(False)
            hit = any(checks)
        elif key in fields:
            name = _status_name(item, fields[key]) or ''
            hit = name.lower() in [v.lower() for v in values]
        else:
            hit = False
        if hit == neg:
            return False
    return True


# -- resolvers ----------------------------------------------------------------------------------

class Resolvers(object):
    """Field resolvers for the fields with arguments or derived values; the rest read dicts."""

    def __init__(self, store, grant=None):
        self.store = store
        self.grant = grant
        self.table = {
            ('Query', 'rateLimit'): self.rate_limit,
            ('Query', 'organization'): self.organization,
            ('Query', 'user'): self.user,
            ('Query', 'repositoryOwner'): self.repository_owner,
            ('Query', 'repository'): self.repository,
            ('Query', 'node'): self.node,
            ('Query', 'nodes'): self.nodes,
            ('Query', 'viewer'): lambda src, info, **a: self.store.owners.get(self.store.viewer) or
            {'__typename': 'User', 'login': self.store.viewer, 'id': 'U_viewer'},
            ('Organization', 'projectV2'): self.project_v2,
            ('User', 'projectV2'): self.project_v2,
            ('ProjectV2', 'field'): self.field,
            ('ProjectV2', 'items'): self.items,
            ('ProjectV2Item', 'fieldValueByName'): self.field_value_by_name,
            ('Repository', 'issue'): self.repo_issue,
            ('Repository', 'collaborators'): self.collaborators,
            ('Issue', 'comments'): self.comments,
            ('Issue', 'timelineItems'): self.timeline_items,
            ('ProjectV2Item', 'content'): self.item_content,
            ('ClosedEvent', 'closer'): self.closer,
            ('Issue', 'closedByPullRequestsReferences'): self.closed_by,
            ('Issue', 'blockedBy'): lambda src, info, **a: connection(src['blocked_by'], **a),
            ('Issue', 'projectItems'): lambda src, info, **a: connection(src['project_items'], **a),
            ('Issue', 'issueDependenciesSummary'): self.dependency_summary,
            ('ProjectV2SingleSelectField', 'options'): self.options,
            ('Commit', 'associatedPullRequests'): self.associated_pulls,
            ('Mutation', 'updateProjectV2ItemFieldValue'): self.update_field_value,
        }
        from .reviews import RESOLVERS as _reviews
        for key, fn in _reviews.items():
            self.table[key] = functools.partial(fn, self)

    def resolve(self, source, info, **args):
        if isinstance(source, dict) and source.get('__forbidden__'):
            raise self._forbidden()
        fn = self.table.get((info.parent_type.name, info.field_name))
        if fn is not None:
            return fn(source, info, **args)
        if isinstance(source, dict):
            return source.get(info.field_name)
        return getattr(source, info.field_name, None)

    @staticmethod
    def type_of(value, info, abstract_type):
        return value.get('__typename') if isinstance(value, dict) else None

    # Permissions (see auth.py): a field the token may not read is null with a FORBIDDEN error at
    # its path, the rest of the answer is data -- GraphQL's partial result
    # (spec.graphql.org/October2021/#sec-Handling-Field-Errors), as GitHub answers an app without
    # "Pull requests: read" ('Resource not accessible by integration').
    def _forbidden(self):
        message = self.grant.forbidden_message() if self.grant is not None else 'Resource not accessible by integration'
        return _error(message, 'FORBIDDEN')

    def _require(self, permission, repo_obj, level='read'):
        if self.grant is None:
            return
        repo = repo_obj.get('nameWithOwner') if isinstance(repo_obj, dict) else None
        if not self.grant.can(permission, level, repo):
            raise self._forbidden()

    def _visible(self, obj):
        """``obj``, or a stand-in whose every field is FORBIDDEN when its repository is off limits."""
        if self.grant is None or not isinstance(obj, dict):
            return obj
        repo = obj.get('repository')
        if isinstance(repo, dict) and repo.get('nameWithOwner') in self.grant.forbidden_repos:
            return {'__typename': obj.get('__typename'), '__forbidden__': True}
        return obj

    def comments(self, src, info, **a):
        self._require('issues', src.get('repository'))
        return connection(src['comments'], **a)

    def item_content(self, src, info):
        content = src.get('content')
        if isinstance(content, dict) and content.get('__typename') in ('Issue', 'PullRequest'):
            self._require('issues' if content['__typename'] == 'Issue' else 'pull_requests', content.get('repository'))
        return content

    def closer(self, src, info):
        closer = src.get('closer')
        if isinstance(closer, dict) and closer.get('__typename') == 'PullRequest':
            self._require('pull_requests', closer.get('repository'))
        return closer

    def associated_pulls(self, src, info, **a):
        self._require('pull_requests', src.get('repository'))
        return connection(src.get('pulls') or [], **a)

    # Query
    def rate_limit(self, src, info, **a):
        return info.context['rate_limit']

    def _owner(self, login, kind):
        owner = self.store.owners.get(login)
        if owner is None or owner['__typename'] != kind:
            raise _error("Could not resolve to a%s %s with the login of '%s'."
                         % ('n' if kind == 'Organization' else '', kind, login), 'NOT_FOUND')
        return owner

    def organization(self, src, info, login):
        return self._owner(login, 'Organization')

    def user(self, src, info, login):
        return self._owner(login, 'User')

    def repository_owner(self, src, info, login):
        return self.store.owners.get(login)

    def repository(self, src, info, owner, name, **a):
        repo = self.store.repos.get('%s/%s' % (owner, name))
        if repo is None:
            raise _error("Could not resolve to a Repository with the name '%s/%s'." % (owner, name), 'NOT_FOUND')
        return repo

    def node(self, src, info, id):
        return self._visible(self.store.nodes.get(id))

    def nodes(self, src, info, ids):
        if len(ids) > 100:
            raise _error('You may not request more than 100 ids at once.', 'EXCESSIVE_PAGINATION')
        found = [self.store.nodes.get(i) for i in ids]
        missing = [i for i, n in zip(ids, found) if n is None]
        if missing:
            raise _error("Could not resolve to a node with the global id of '%s'" % missing[0], 'NOT_FOUND')
        return [self._visible(n) for n in found]

    # Owners and projects
    def project_v2(self, src, info, number):
        project = src['projects'].get(number)
        if project is None:
            raise _error("Could not resolve to a ProjectV2 with the number %d." % number, 'NOT_FOUND')
        return project

    def field(self, src, info, name):
        for f in src['fields']:
            if f['name'] == name:
                return f
        return None

    def options(self, src, info, names=None):
        return [o for o in src['options'] if names is None or o['name'] in names]

    def items(self, src, info, query='', archivedStates=None, orderBy=None, **a):
        terms = parse_filter(query or '')
        states = archivedStates if archivedStates is not None else ['NOT_ARCHIVED']
        chosen = [i for i in src['items']
                  if ('ARCHIVED' if i['isArchived'] else 'NOT_ARCHIVED') in states and item_matches(i, terms)]
        return connection(chosen, **a)

    def field_value_by_name(self, src, info, name):
        for f in src['project']['fields']:
            if f['name'] == name and f.get('dataType', 'SINGLE_SELECT') != 'SINGLE_SELECT':
                if f['id'] not in src['values']:
                    return None
                common = {'id': 'PVTFV_%s_%s' % (src['id'], f['id']), 'field': f, 'item': src,
                          'createdAt': src['createdAt'], 'updatedAt': src['updatedAt']}
                if f['dataType'] == 'NUMBER':
                    return dict(common, __typename='ProjectV2ItemFieldNumberValue', number=float(src['values'][f['id']]))
                return dict(common, __typename='ProjectV2ItemFieldTextValue', text=str(src['values'][f['id']]))
            if f['name'] == name:
                value = _status_name(src, f)
                if value is None:
                    return None
                oid = src['values'][f['id']]
                return {'__typename': 'ProjectV2ItemFieldSingleSelectValue', 'name': value, 'optionId': oid,
                        'id': 'PVTFSV_%s_%s' % (src['id'], f['id']), 'field': f, 'item': src,
                        'createdAt': src['createdAt'], 'updatedAt': src['updatedAt'], 'color': 'GRAY'}
        return None

    # Issues
    def collaborators(self, src, info, login=None, **a):
        """``collaborators(login:)``: the one collaborator's edge with its ``permission``, as GitHub
        answers it (the edge, not the node, carries the permission)."""
        found = [(name, perm) for name, perm in sorted(self.store.permissions.items())
                 if login is None or name.lower() == str(login).lower()]
        conn = connection([{'__typename': 'User', 'login': name} for name, _perm in found], **a)
        perms = dict(found)
        for edge in conn['edges']:
            edge['permission'] = perms[edge['node']['login']]
        return conn

    def repo_issue(self, src, info, number):
        issue = src['issues'].get(number)
        if issue is None:
            raise _error("Could not resolve to an Issue with the number of %d." % number, 'NOT_FOUND')
        return issue

    def timeline_items(self, src, info, itemTypes=None, since=None, skip=None, **a):
        self._require('issues', src.get('repository'))
        kinds = None
        if itemTypes is not None:
            kinds = set(''.join(p.capitalize() for p in t.split('_')) for t in itemTypes)
        events = [e for e in src['timeline'] if kinds is None or e['__typename'] in kinds]
        return connection(events, **a)

    def closed_by(self, src, info, includeClosedPrs=False, orderByState=False, userLinkedOnly=False, **a):
        self._require('pull_requests', src.get('repository'))
        prs = [p for p in src['closing_prs'] if includeClosedPrs or p['state'] == 'OPEN']
        return connection(prs, **a)

    def dependency_summary(self, src, info):
        blockers = src['blocked_by']
        return {'blockedBy': sum(1 for b in blockers if b['state'] == 'OPEN'), 'totalBlockedBy': len(blockers),
                'blocking': 0, 'totalBlocking': 0}

    # Mutations
    def update_field_value(self, src, info, input):
        if self.grant is not None and not self.grant.can('organization_projects', 'write'):
            raise self._forbidden()
        item = self.store.nodes.get(input['itemId'])
        project = self.store.nodes.get(input['projectId'])
        if item is None or project is None or item.get('project') is not project:
            raise _error('Could not resolve the project item.', 'NOT_FOUND')
        field = self.store.nodes.get(input['fieldId'])
        if field is None or field not in project['fields']:
            raise _error('Could not resolve the field.', 'NOT_FOUND')
        option = input['value'].get('singleSelectOptionId')
        if option not in [o['id'] for o in field['options']]:
            raise _error('The single select option Id does not belong to the field', 'UNPROCESSABLE')
        item['values'][field['id']] = option
        item['updatedAt'] = self.store.now()
        return {'projectV2Item': item, 'clientMutationId': input.get('clientMutationId')}


def execute(store, rate_limit, document: str, variables: Optional[Dict[str, Any]] = None,
            operation_name: Optional[str] = None, schema=None, grant=None) -> Dict[str, Any]:
    """Run one GraphQL request as GitHub would: parse, validate, limit-check, price, execute.

    ``rate_limit`` is the fake's dict (``limit``, ``used``, ``resetAt``); it is charged the cost.
    Returns the response body (``data`` and/or ``errors``; ``errors`` entries carry ``type``).
    """
    schema = schema or load_schema()
    try:
        doc = graphql.parse(document)
    except GraphQLError as exc:
        return {'errors': [{'message': exc.message, 'type': 'PARSE_ERROR'}]}
    problems = graphql.validate(schema, doc)
    if problems:
        return {'errors': [{'message': p.message, 'type': 'INVALID', 'locations': [{'line': loc.line, 'column': loc.column} for loc in (p.locations or [])]}
                           for p in problems]}
    analysis = _cost.analyse(schema, doc, variables or {}, operation_name)
    if analysis.violations:
        return {'errors': [{'message': v, 'type': 'EXCESSIVE_PAGINATION' if 'outside' in v else 'MISSING_PAGINATION_BOUNDARIES'}
                           for v in analysis.violations]}
    points = analysis.cost
    remaining = rate_limit['limit'] - rate_limit['used']
    if points > remaining:
        return {'errors': [{'type': 'RATE_LIMITED', 'message': 'API rate limit exceeded for user.'}]}
    rate_limit['used'] += points
    info = {'cost': points, 'limit': rate_limit['limit'], 'remaining': rate_limit['limit'] - rate_limit['used'],
            'used': rate_limit['used'], 'resetAt': rate_limit['resetAt'], 'nodeCount': analysis.nodes}
    rate_limit['last'] = dict(info, requests=analysis.requests, operation=operation_name)
    resolvers = Resolvers(store, grant)
    with store.lock:
        result = graphql.execute(schema, doc, variable_values=variables or {}, operation_name=operation_name,
                                 context_value={'rate_limit': info}, field_resolver=resolvers.resolve,
                                 type_resolver=Resolvers.type_of)
    body = {}  # type: Dict[str, Any]
    if result.errors:
        body['errors'] = []
        for err in result.errors:
            entry = err.formatted
            entry['type'] = (err.extensions or {}).get('type', 'INTERNAL')
            entry.pop('extensions', None)
            body['errors'].append(entry)
    body['data'] = result.data
    return body
