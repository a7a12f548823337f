"""Reading a wasm binary's fields, shared by the benches that walk one
(instructions.py: the runtime's exports; wsregions.py: the memory's data segments)."""


def leb(b, i):
    """The unsigned LEB128 number at `b[i]`, and the index after it."""
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i
