"""The fleet: many cocoplus projects on many machines joined over NATS JetStream.

The files under `.cocoplus/` stay each project's source of truth; a relay
per project (`cocoplus relay run`) mirrors them to the fleet and brings
fleet commands back as the same local calls the CLI makes.  Nothing on the
hook path imports this package.

    naming     subjects, streams, consumers, keys and targets (stdlib)
    options    the [fleet] configuration (stdlib)
    accounts   a nats-server configuration that holds each machine to its own subjects (stdlib)
    process    the relay as a process: status file, start, stop (stdlib)
    commands   command shapes, what each type does here, the applied record
    snapshot   a project's state as the fleet sees it
    outbox     the appended files the relay publishes, and its cursors
    connect    one connection (nats-py), credentials, TLS
    streams    the streams, bucket and consumer a relay needs
    relay      `cocoplus relay run`
    client     `cocoplus fleet status|stop|resume|steer` from any machine
"""
