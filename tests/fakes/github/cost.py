# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GitHub's GraphQL limits and cost formula, over a document's syntax tree.

graphql-core validates a document against the schema but knows nothing of GitHub's own rules
(docs.github.com/graphql/overview/rate-limits-and-node-limits-for-the-graphql-api):

* every connection needs ``first`` or ``last``, each within 1..100;
* one call may request at most 500,000 nodes;
* the primary rate-limit cost of a call: add up the requests needed to fulfil each connection,
  assuming each request reaches its ``first``/``last`` (a nested connection needs one request
  per parent object), divide by 100, round to the nearest whole number; at least 1.

``analyse`` computes all three for one document. It serves the fake GitHub (which returns the
cost in ``rateLimit``) and the document tests (which check the limits statically). A list
field ``nodes(ids: [...])`` on the root multiplies what sits below it by the number of ids:
each id is one parent object (our reading of the formula: the docs give no ``nodes`` example).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from graphql import (FieldNode, FragmentDefinitionNode, FragmentSpreadNode, GraphQLObjectType,
                     GraphQLInterfaceType, InlineFragmentNode, OperationDefinitionNode, VariableNode,
                     get_named_type, parse, value_from_ast_untyped)

MAX_PAGE = 100
MAX_NODES = 500000


@dataclass
class Analysis:
    requests: int = 0
    nodes: int = 0
    violations: List[str] = field(default_factory=list)
    connections: List[str] = field(default_factory=list)

    @property
    def cost(self) -> int:
        """GitHub's points: requests / 100, rounded half up, never below 1."""
        return max(1, int(math.floor(self.requests / 100.0 + 0.5)))


def analyse(schema, document, variables: Optional[Dict[str, Any]] = None, operation_name: Optional[str] = None) -> Analysis:
    """Walk ``document`` (text or AST). ``variables=None`` is the static mode: a variable
    ``first``/``last`` is reported (the value cannot be checked), and ``@include``/``@skip`` are
    taken as included (worst case)."""
    doc = parse(document) if isinstance(document, str) else document
    fragments = dict((d.name.value, d) for d in doc.definitions if isinstance(d, FragmentDefinitionNode))
    ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name:
        ops = [o for o in ops if o.name and o.name.value == operation_name]
    result = Analysis()
    if not ops:
        result.violations.append('no operation %r in the document' % (operation_name,))
        return result
    op = ops[0]
    root = {'query': schema.query_type, 'mutation': schema.mutation_type}.get(op.operation.value)
    _walk(schema, fragments, variables, root, op.selection_set, 1, [], result, root)
    if result.nodes > MAX_NODES:
        result.violations.append('requests %d nodes, over GitHub\'s %d' % (result.nodes, MAX_NODES))
    return result


def _included(node, variables) -> bool:
    for d in node.directives or ():
        if d.name.value not in ('include', 'skip') or variables is None:
            continue
        arg = [a for a in d.arguments if a.name.value == 'if']
        value = bool(value_from_ast_untyped(arg[0].value, variables)) if arg else True
        if d.name.value == 'include' and not value:
            return False
        if d.name.value == 'skip' and value:
            return False
    return True


def _walk(schema, fragments, variables, parent, selection_set, multiplier, path, result, root):
    if selection_set is None or parent is None:
        return
    for sel in selection_set.selections:
        if not _included(sel, variables):
            continue
        if isinstance(sel, InlineFragmentNode):
            t = schema.get_type(sel.type_condition.name.value) if sel.type_condition else parent
            _walk(schema, fragments, variables, t, sel.selection_set, multiplier, path, result, root)
            continue
        if isinstance(sel, FragmentSpreadNode):
            frag = fragments.get(sel.name.value)
            if frag is not None:
                t = schema.get_type(frag.type_condition.name.value)
                _walk(schema, fragments, variables, t, frag.selection_set, multiplier, path, result, root)
            continue
        if not isinstance(sel, FieldNode) or sel.name.value.startswith('__'):
            continue
        if not isinstance(parent, (GraphQLObjectType, GraphQLInterfaceType)):
            continue
        fdef = parent.fields.get(sel.name.value)
        if fdef is None:
            continue  # graphql.validate reports unknown fields
        name = sel.name.value
        here = path + [(sel.alias.value if sel.alias else name)]
        rtype = get_named_type(fdef.type)
        args = {}
        for a in sel.arguments or ():
            if isinstance(a.value, VariableNode) and variables is None:
                args[a.name.value] = a.value  # unknown in static mode
            else:
                args[a.name.value] = value_from_ast_untyped(a.value, variables or {})
        child = multiplier
        if rtype.name.endswith('Connection') and isinstance(rtype, GraphQLObjectType):
            where = '.'.join(here)
            result.connections.append(where)
            size = None
            for key in ('first', 'last'):
                if key not in args or args[key] is None:
                    continue
                value = args[key]
                if isinstance(value, VariableNode):
                    result.violations.append('%s: %s is a variable; use a literal so the limit can be checked'
                                             % (where, key))
                    size = MAX_PAGE
                elif not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_PAGE:
                    result.violations.append('%s: %s=%r is outside 1..%d' % (where, key, value, MAX_PAGE))
                    size = MAX_PAGE
                else:
                    size = value
                break
            if size is None:
                result.violations.append('%s: a connection needs first or last' % where)
                size = MAX_PAGE
            result.requests += multiplier
            result.nodes += multiplier * size
            child = multiplier * size
        elif parent is root and name == 'nodes':
            ids = args.get('ids')
            child = multiplier * (len(ids) if isinstance(ids, list) else MAX_PAGE)
        _walk(schema, fragments, variables, rtype, sel.selection_set, child, here, result, root)
