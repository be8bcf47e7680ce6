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
    'xpending_range':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 1},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 1}],
    'xrange':
        [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
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
    'xpending_range':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 1},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 1}],
    'xrange':
        [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
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
    'xpending_range':
        [{'message_id': b'1-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 1},
         {'message_id': b'2-1',
          'consumer': b'c',
          'time_since_delivered': 0,
          'times_delivered': 1}],
    'xrange':
        [(b'1-1', {b'f': b'v', b'x': b'1'}), (b'2-1', {b'f': b'w'})],
    'zrevrange_withscores':
        [[b'alpha', 3.0], [b'beta', 1.5]],
    'hgetall':
        {b'a': b'1', b'b': b'2'},
    'hgetall_missing':
        {},
    'script_table':
        [1, b'a', [2, 3], 3, 1, None],
}
