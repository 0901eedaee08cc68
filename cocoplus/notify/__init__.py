"""Notifications that reach the human: `[notify] urls`, `[notify] events`, `cocoplus notify ...`.

events (which lines of the logs cocoplus keeps are worth a notification),
messages (what a notification says), outbox (the persisted state: cursors,
messages not yet delivered, dedupe, rate limits, back-off), deliver (the
only module that imports apprise), runner (the loop the watcher runs in a
thread, or `cocoplus notify run` in the foreground).  Nothing here runs in
a hook.
"""
