"""The decision inbox: what waits for a person, and the channels that reach the operator's phone.

Off the hook path: the hook only writes a decision; the per-user inbox process serves the channels.
"""
