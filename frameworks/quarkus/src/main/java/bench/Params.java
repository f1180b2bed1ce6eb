package bench;

import bench.shared.Contract;
import jakarta.ws.rs.BadRequestException;

/**
 * The contract's query parameters (bench.shared.Contract: ms, n, id, calls) as JAX-RS answers them: a parameter the
 * contract rejects is a 400. Taken as Strings, because a JAX-RS int parameter that fails to convert
 * gives 404, not the contract's 400.
 */
final class Params {
    private Params() {
    }

    static int sleepMs(String raw) {
        return valid(Contract.sleepMs(raw));
    }

    static int primesN(String raw) {
        return valid(Contract.primesN(raw));
    }

    static int itemId(String raw) {
        return valid(Contract.itemId(raw));
    }

    static int fanOutCalls(String raw) {
        return valid(Contract.fanOutCalls(raw));
    }

    private static int valid(int value) {
        if (value == Contract.INVALID) {
            throw new BadRequestException();
        }
        return value;
    }
}
