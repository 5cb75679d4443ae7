"""The Cython target: the same reading plans rendered as Cython (`emit`: the Python emitter with
C locals, cdef readers and columns; `render`: the modules and their .pxd, through `templates/`),
into `generated/native/`, with the runtime (`runtime/`) copied as it is."""
