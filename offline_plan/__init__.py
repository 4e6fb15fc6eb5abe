"""The offline plan: run a Pulumi Python program under the SDK's mock engine, record every resource
as the engine would receive it, evaluate the policy pack, and report (`inferctl plan`)."""
