#!/usr/bin/env node
// Sample Royal Casino Arena bot in Node.js.
//
// A bot package (bot.toml: runtime "node"): the node runtime gives it @grpc/grpc-js and
// @grpc/proto-loader (NODE_PATH) and the proto files (CASINO_PROTO_PATH). Serves
// casino.v1.BotService on $CASINO_BOT_ADDRESS (unix:/path/bot.sock or host:port), loading the
// protocol with @grpc/proto-loader from the runtime's proto files, else from its own copy in proto/
// (the repository's proto/casino/v1 files, checked identical by tests/docs/test_sample_bot_protos.py).
// It also answers the standard health check (grpc.health.v1.Health, SERVING), declared inline below.
//
// Strategy: capture the most valuable set (cards as they score: 10D 2, 2S 1, Aces 1, spades and
// card count a little, a sweep 1), else make the most valuable build, else trail the least
// valuable card. Write your own by replacing choose(turn): return an index into turn.legal_moves.
//
// Check it: referee check sample_bots/node. By hand: npm ci in runtimes/node, then
// NODE_PATH=runtimes/node/node_modules CASINO_BOT_ADDRESS=unix:/tmp/node-bot.sock node sample_bots/node/bot.js
'use strict';

const path = require('path');
const fs = require('fs');
process.env.GRPC_VERBOSITY = process.env.GRPC_VERBOSITY || 'NONE'; // gRPC's own log lines
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const NAME = 'node-bot';
const VERSION = '0.1.0';
const PROTOCOL_VERSION = '1.2';
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

// --- the strategy -------------------------------------------------------------------------------

// What a card is worth at the deal's end: a share of most cards (3 points) and most spades (1),
// 10D 2 points, 2S 1, each Ace 1.
function worth(code) {
  const rank = code.slice(0, -1);
  const suit = code.slice(-1);
  let w = 3 / 27;
  if (suit === 'S') w += 1 / 7;
  if (code === '10D') w += 2;
  if (code === '2S') w += 1;
  if (rank === 'A') w += 1;
  return w;
}

const RANKS = ['A', '2', '3', '4', '5', '6', '7', '8', '9', '10', 'J', 'Q', 'K'];
const rankOf = (code) => RANKS.indexOf(code.slice(0, -1)) + 1;

// Cards a capture takes, or a build gathers: the played card, the loose cards, the builds' cards.
function gathered(move, buildsById) {
  const cards = [move.card, ...move.loose];
  for (const id of move.builds) {
    const build = buildsById.get(id);
    if (build) cards.push(...build.cards);
  }
  return cards;
}

// Index into turn.legal_moves.
// An error as the referee records it: its type, message and where (the first frame of its stack).
function errorText(err) {
  const name = (err && err.name) || 'Error';
  const frame = ((err && err.stack) || '').split('\n').find((line) => line.trim().startsWith('at ')) || '';
  const where = frame.match(/\(?([^()\s]+):(\d+):\d+\)?$/);
  const place = where ? ` (${path.basename(where[1])}:${where[2]})` : '';
  return `${name}: ${(err && err.message) || err}`.slice(0, 480) + place;
}

function choose(turn) {
  const obs = turn.observation;
  const buildsById = new Map(obs.builds.map((b) => [b.id, b]));
  let best = -1;
  let bestKey = null;
  turn.legal_moves.forEach((move, i) => {
    let key;
    if (move.kind === 'MOVE_KIND_CAPTURE') {
      const cards = gathered(move, buildsById);
      const sweep = move.loose.length === obs.loose.length && move.builds.length === obs.builds.length;
      key = [2, cards.reduce((s, c) => s + worth(c), 0) + (sweep ? 1 : 0), cards.length];
    } else if (move.kind === 'MOVE_KIND_TRAIL') {
      key = [0, -worth(move.card), rankOf(move.card)]; // equal worth: give away a high card
    } else {
      const cards = gathered(move, buildsById);
      key = [1, cards.reduce((s, c) => s + worth(c), 0), cards.length];
    }
    if (bestKey === null || compare(key, bestKey) > 0) {
      best = i;
      bestKey = key;
    }
  });
  return Math.max(best, 0);
}

function compare(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

// --- the service --------------------------------------------------------------------------------

function log(message) {
  process.stderr.write(`${new Date().toISOString()} ${NAME}: ${message}\n`);
}

function play(call) {
  let match = '?';
  let seat = 0;
  let side = 0;
  call.on('data', (req) => {
    switch (req.event) {
      case 'handshake': {
        const hs = req.handshake;
        match = hs.match_id || '?';
        const tc = hs.time_control || {};
        log(`match ${match}: ${hs.games} game(s), ${hs.options ? hs.options.players : '?'} players, ` +
            `${tc.move_time_ms} ms/move, protocol ${hs.protocol_version}`);
        call.write({ hello: { name: NAME, version: VERSION, protocol_version: PROTOCOL_VERSION } });
        break;
      }
      case 'turn': {
        let index = 0;
        let error = '';
        try {
          index = choose(req.turn);
        } catch (err) {
          // a bug in choose(): answer the first legal move, and tell the referee it is a fallback
          // after this error (protocol 1.2, MoveChoice.error), so the owner sees it and a check is not clean
          log(`choose failed (${err && err.stack}); answering index 0`);
          error = errorText(err);
        }
        call.write({ move: { turn_id: req.turn.turn_id, index, error } });
        break;
      }
      case 'game_start':
        ({ seat, side } = req.game_start);
        break;
      case 'game_end': {
        const r = req.game_end.result || {};
        const outcome = r.winner_side < 0 ? 'draw' : r.winner_side === side ? 'won' : 'lost';
        const scores = (r.scores || []).join('-');
        log(`match ${match} game ${r.game_id}, seat ${seat}: ${outcome}, scores ${scores} (${r.reason}, ${r.deals} deals)`);
        break;
      }
      default: // play_made needs no answer
        break;
    }
  });
  call.on('end', () => {
    log(`match ${match}: stream closed`);
    call.end();
  });
  call.on('error', (err) => log(`match ${match}: stream error: ${err.message}`));
}

// grpc.health.v1.Health, declared inline so that no extra package or .proto file is needed.
const HEALTH_JSON = {
  nested: { grpc: { nested: { health: { nested: { v1: { nested: {
    HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
    HealthCheckResponse: {
      fields: { status: { type: 'ServingStatus', id: 1 } },
      nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } } },
    },
    Health: { methods: {
      Check: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse' },
      Watch: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse', responseStream: true },
    } },
  } } } } } } },
};

function healthService(status) {
  const known = (service) => service === '' || service === 'casino.v1.BotService';
  return {
    Check(call, callback) {
      if (!known(call.request.service)) callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
      else callback(null, { status: status.value });
    },
    Watch(call) {
      call.write({ status: known(call.request.service) ? status.value : 'SERVICE_UNKNOWN' });
      status.watchers.add(call);
      call.on('cancelled', () => status.watchers.delete(call));
    },
  };
}

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(2);
}

function main() {
  const address = process.env.CASINO_BOT_ADDRESS || '';
  if (!address) fail('CASINO_BOT_ADDRESS is not set (e.g. unix:/tmp/bot.sock or 127.0.0.1:50051)');
  const unix = address.startsWith('unix:');
  if (!unix && !/^.+:\d{1,5}$/.test(address)) {
    fail(`bad CASINO_BOT_ADDRESS=${JSON.stringify(address)}: expected unix:/path/to/socket or host:port`);
  }
  if (unix) { // a socket file left by an earlier run would make the bind fail
    const file = address.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    try {
      if (fs.statSync(file).isSocket()) fs.unlinkSync(file);
    } catch (_) { /* not there */ }
  }

  // the runtime's proto files (the node runtime sets CASINO_PROTO_PATH), else this folder's own copy
  const protoRoot = process.env.CASINO_PROTO_PATH || path.resolve(__dirname, 'proto');
  const definition = protoLoader.loadSync('casino/v1/bot.proto', { ...LOADER_OPTIONS, includeDirs: [protoRoot] });
  const casino = grpc.loadPackageDefinition(definition).casino.v1;
  const health = grpc.loadPackageDefinition(protoLoader.fromJSON(HEALTH_JSON, LOADER_OPTIONS)).grpc.health.v1;
  const status = { value: 'SERVING', watchers: new Set() };

  const server = new grpc.Server();
  server.addService(casino.BotService.service, { Play: play });
  server.addService(health.Health.service, healthService(status));
  server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) fail(`cannot listen on CASINO_BOT_ADDRESS=${JSON.stringify(address)}: ${err.message}`);
    log(`${NAME} ${VERSION} serving on ${address}`);
  });

  const stop = () => {
    log('shutting down');
    status.value = 'NOT_SERVING';
    for (const call of status.watchers) {
      call.write({ status: 'NOT_SERVING' });
      call.end();
    }
    const timer = setTimeout(() => { server.forceShutdown(); process.exit(0); }, 2000);
    server.tryShutdown(() => {
      clearTimeout(timer);
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) main();

module.exports = { choose, worth };
