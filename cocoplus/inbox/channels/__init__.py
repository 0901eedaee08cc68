"""The phone channels of the decision inbox: the transport only.

common (Push, Action, Sent, Tap, the Listener every channel's receive loop is), ntfy (pushes with buttons on
ntfy, the reply topic heard through its JSON stream), telegram (the operator's bot: an inline keyboard, edits,
getUpdates), _http (the standard library's http.client, with connections a listener can cut at once).  The
inbox process drives each channel the same way: `send(push)`, `update(message_id, push)`, `answer(tap, text)`,
`listener(on_tap, on_problem).start()` ... `stop()`.  Nothing here reads configuration, records decisions or
checks tokens: the caller does.  Importing it touches no network.
"""
