"""The queue's protocol, I/O-free: key layout, record codec, the Lua scripts and their replies."""
