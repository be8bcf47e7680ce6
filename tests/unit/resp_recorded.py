"""Replies recorded from redis-server 7.0.15 by redis-py 8.1.0
through streamdelay's step runner (the asyncio lean round trip), written by
``python -m tests.support.resp_replies`` (tests/support/resp_replies.py). UNIFIED is redis-py
8's ``legacy_responses=false``. Do not edit by hand."""

from typing import Any

REDIS_PY = '8.1.0'  # the raw shapes are redis-py's: see test_resp3.py

RESP2: dict[str, Any] = {
    'xreadgroup_two_streams':
        [[b'rec:{r}s1', [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]],
         [b'rec:{r}s2', [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]]],
    'xreadgroup_one_entry':
        [[b'rec:{r}s1', [(b'1-1', {b'f': b'v', b'x': b'1'})]]],
    'xreadgroup_nothing':
        [],
    'xreadgroup_own_pending':
        [[b'rec:{r}s1', [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]]],
    'xread_two_streams':
        [[b'rec:{r}s1', [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]],
         [b'rec:{r}s2', [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]]],
    'xread_nothing':
        [],
    'xinfo_groups':
        [[b'name',
          b'g1',
          b'consumers',
          1,
          b'pending',
          1,
          b'last-delivered-id',
          b'1-1',
          b'entries-read',
          1,
          b'lag',
          1],
         [b'name',
          b'g2',
          b'consumers',
          1,
          b'pending',
          2,
          b'last-delivered-id',
          b'2-1',
          b'entries-read',
          2,
          b'lag',
          0]],
    'xinfo_consumers':
        [[b'name', b'c', b'pending', 1, b'idle', 0]],
    'xinfo_stream':
        [b'length',
         2,
         b'radix-tree-keys',
         1,
         b'radix-tree-nodes',
         2,
         b'last-generated-id',
         b'2-1',
         b'max-deleted-entry-id',
         b'0-0',
         b'entries-added',
         2,
         b'recorded-first-entry-id',
         b'1-1',
         b'groups',
         2,
         b'first-entry',
         [b'1-1', [b'f', b'v', b'x', b'1']],
         b'last-entry',
         [b'2-1', [b'f', b'w']]],
    'xpending_range':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2}],
    'xpending_range_idle':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2}],
    'xpending_summary':
        {'pending': 2, 'min': b'1-1', 'max': b'2-1', 'consumers': [{'name': b'c', 'pending': 2}]},
    'xpending_summary_empty':
        {'pending': 0, 'min': None, 'max': None, 'consumers': []},
    'xrange':
        [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
    'xrange_one':
        [(b'2-1', {b'f': b'w'})],
    'xrange_missing':
        [],
    'xrevrange':
        [(b'2-1', {b'f': b'w'}), (b'1-1', {b'f': b'v', b'x': b'1'})],
    'xlen':
        2,
    'xclaim':
        [(b'1-1', {b'f': b'v', b'x': b'1'})],
    'xclaim_justid':
        [b'2-1'],
    'xautoclaim':
        [b'0-0', [(b'1-1', {b'f': b'v', b'x': b'1'})], []],
    'xgroup_create':
        b'OK',
    'xadd':
        b'1-1',
    'xadd_capped':
        b'2-1',
    'xack':
        0,
    'xdel':
        1,
    'xtrim':
        1,
    'xgroup_setid':
        b'OK',
    'xgroup_delconsumer':
        0,
    'xgroup_destroy':
        1,
    'zrevrange_withscores':
        [b'alpha', b'3', b'beta', b'1.5'],
    'hgetall':
        {b'a': b'1', b'b': b'2'},
    'hgetall_missing':
        {},
    'script_table':
        [1, b'a', [2, 3], 3, 1, None],
}

RESP3: dict[str, Any] = {
    'xreadgroup_two_streams':
        {b'rec:{r}s1': [[(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]],
         b'rec:{r}s2': [[(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]]},
    'xreadgroup_one_entry':
        {b'rec:{r}s1': [[(b'1-1', {b'f': b'v', b'x': b'1'})]]},
    'xreadgroup_nothing':
        {},
    'xreadgroup_own_pending':
        {b'rec:{r}s1': [[(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]]},
    'xread_two_streams':
        {b'rec:{r}s1': [[(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]],
         b'rec:{r}s2': [[(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]]},
    'xread_nothing':
        {},
    'xinfo_groups':
        [{b'name': b'g1',
          b'consumers': 1,
          b'pending': 1,
          b'last-delivered-id': b'1-1',
          b'entries-read': 1,
          b'lag': 1},
         {b'name': b'g2',
          b'consumers': 1,
          b'pending': 2,
          b'last-delivered-id': b'2-1',
          b'entries-read': 2,
          b'lag': 0}],
    'xinfo_consumers':
        [{b'name': b'c', b'pending': 1, b'idle': 0}],
    'xinfo_stream':
        {b'length': 2,
         b'radix-tree-keys': 1,
         b'radix-tree-nodes': 2,
         b'last-generated-id': b'2-1',
         b'max-deleted-entry-id': b'0-0',
         b'entries-added': 2,
         b'recorded-first-entry-id': b'1-1',
         b'groups': 2,
         b'first-entry': [b'1-1', [b'f', b'v', b'x', b'1']],
         b'last-entry': [b'2-1', [b'f', b'w']]},
    'xpending_range':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2}],
    'xpending_range_idle':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2}],
    'xpending_summary':
        {'pending': 2, 'min': b'1-1', 'max': b'2-1', 'consumers': [{'name': b'c', 'pending': 2}]},
    'xpending_summary_empty':
        {'pending': 0, 'min': None, 'max': None, 'consumers': []},
    'xrange':
        [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
    'xrange_one':
        [(b'2-1', {b'f': b'w'})],
    'xrange_missing':
        [],
    'xrevrange':
        [(b'2-1', {b'f': b'w'}), (b'1-1', {b'f': b'v', b'x': b'1'})],
    'xlen':
        2,
    'xclaim':
        [(b'1-1', {b'f': b'v', b'x': b'1'})],
    'xclaim_justid':
        [b'2-1'],
    'xautoclaim':
        [b'0-0', [(b'1-1', {b'f': b'v', b'x': b'1'})], []],
    'xgroup_create':
        b'OK',
    'xadd':
        b'1-1',
    'xadd_capped':
        b'2-1',
    'xack':
        0,
    'xdel':
        1,
    'xtrim':
        1,
    'xgroup_setid':
        b'OK',
    'xgroup_delconsumer':
        0,
    'xgroup_destroy':
        1,
    'zrevrange_withscores':
        [[b'alpha', 3.0], [b'beta', 1.5]],
    'hgetall':
        {b'a': b'1', b'b': b'2'},
    'hgetall_missing':
        {},
    'script_table':
        [1, b'a', [2, 3], 3, 1, None],
}

UNIFIED: dict[str, Any] = {
    'xreadgroup_two_streams':
        {b'rec:{r}s1': [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
         b'rec:{r}s2': [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]},
    'xreadgroup_one_entry':
        {b'rec:{r}s1': [(b'1-1', {b'f': b'v', b'x': b'1'})]},
    'xreadgroup_nothing':
        {},
    'xreadgroup_own_pending':
        {b'rec:{r}s1': [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]},
    'xread_two_streams':
        {b'rec:{r}s1': [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
         b'rec:{r}s2': [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})]},
    'xread_nothing':
        {},
    'xinfo_groups':
        [{b'name': b'g1',
          b'consumers': 1,
          b'pending': 1,
          b'last-delivered-id': b'1-1',
          b'entries-read': 1,
          b'lag': 1},
         {b'name': b'g2',
          b'consumers': 1,
          b'pending': 2,
          b'last-delivered-id': b'2-1',
          b'entries-read': 2,
          b'lag': 0}],
    'xinfo_consumers':
        [{b'name': b'c', b'pending': 1, b'idle': 0}],
    'xinfo_stream':
        {b'length': 2,
         b'radix-tree-keys': 1,
         b'radix-tree-nodes': 2,
         b'last-generated-id': b'2-1',
         b'max-deleted-entry-id': b'0-0',
         b'entries-added': 2,
         b'recorded-first-entry-id': b'1-1',
         b'groups': 2,
         b'first-entry': [b'1-1', [b'f', b'v', b'x', b'1']],
         b'last-entry': [b'2-1', [b'f', b'w']]},
    'xpending_range':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2}],
    'xpending_range_idle':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 2}],
    'xpending_summary':
        {'pending': 2, 'min': b'1-1', 'max': b'2-1', 'consumers': [{'name': b'c', 'pending': 2}]},
    'xpending_summary_empty':
        {'pending': 0, 'min': None, 'max': None, 'consumers': []},
    'xrange':
        [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
    'xrange_one':
        [(b'2-1', {b'f': b'w'})],
    'xrange_missing':
        [],
    'xrevrange':
        [(b'2-1', {b'f': b'w'}), (b'1-1', {b'f': b'v', b'x': b'1'})],
    'xlen':
        2,
    'xclaim':
        [(b'1-1', {b'f': b'v', b'x': b'1'})],
    'xclaim_justid':
        [b'2-1'],
    'xautoclaim':
        [b'0-0', [(b'1-1', {b'f': b'v', b'x': b'1'})], []],
    'xgroup_create':
        b'OK',
    'xadd':
        b'1-1',
    'xadd_capped':
        b'2-1',
    'xack':
        0,
    'xdel':
        1,
    'xtrim':
        1,
    'xgroup_setid':
        b'OK',
    'xgroup_delconsumer':
        0,
    'xgroup_destroy':
        1,
    'zrevrange_withscores':
        [[b'alpha', 3.0], [b'beta', 1.5]],
    'hgetall':
        {b'a': b'1', b'b': b'2'},
    'hgetall_missing':
        {},
    'script_table':
        [1, b'a', [2, 3], 3, 1, None],
}
