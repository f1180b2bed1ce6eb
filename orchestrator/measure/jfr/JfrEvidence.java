import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * Reads one Flight Recorder file and prints, for each window given (epoch milliseconds), the
 * evidence jfr_evidence.py stores as columns of that window's row: one JSON object per line.
 *
 * Usage: java JfrEvidence RECORDING START_MS:END_MS [START_MS:END_MS ...]
 *
 * Written against the JDK's own consumer API (jdk.jfr.consumer), so that it reads what the JVM
 * under test wrote, whatever its version. Only the JDK is needed; the output is plain JSON.
 */
public final class JfrEvidence {
    /** Application code: every target's own classes live in package bench, the test fixture's in Fixture. */
    static final Pattern APP = Pattern.compile("^(bench\\.|Fixture\\b)");
    /** Threads that run an event loop: Reactor Netty, Vert.x (and Quarkus), Netty for Ktor, Undertow's XNIO I/O
     * threads, and the JDK HTTP server's dispatcher (the fixture's event-loop variant). */
    static final Pattern EVENT_LOOP = Pattern.compile(
            "^(reactor-http-(epoll|nio)-\\d+|vert\\.x-eventloop-thread-\\d+|eventLoopGroupProxy-.*|nioEventLoopGroup-.*"
            + "|epollEventLoopGroup-.*|XNIO-\\d+ I/O-\\d+|HTTP-Dispatcher)$");
    /** The JDK's default virtual-thread scheduler names its carriers so. */
    static final Pattern CARRIER = Pattern.compile("^ForkJoinPool-\\d+-worker-\\d+$");
    static final Pattern PARKING = Pattern.compile("^(java\\.lang\\.VirtualThread|java\\.lang\\.Continuation|jdk\\.internal\\.)");
    static final Pattern IDLE = Pattern.compile("^(getTask|awaitWork)$");
    static final int HOT_METHODS = 5, STACK_FRAMES = 6;
    /** A thread counts as busy when it used at least this share of a CPU over the window. */
    static final double BUSY_CPU = 0.01;
    /** How far from a window a thread's allocation reading may lie and still bracket it: a few periods
     * of jdk.ThreadAllocationStatistics (flight_recorder.py sets 100 ms). */
    static final long BRACKET_MS = 1000;

    static final class Window {
        final Instant start, end;
        long samples, pinnedCount, gcCount, eventLoopSamples, eventLoopAppSamples;
        double pinnedMs, parkedMs, monitorMs, sleepMs, socketReadMs, gcPauseMs, safepointMs;
        final Map<String, Long> hot = new HashMap<>();
        final Map<String, Double> pinnedStacks = new HashMap<>();
        final Map<String, double[]> threadCpu = new HashMap<>();   // name -> {sum of loads, periods}
        final Set<Long> virtualThreads = new HashSet<>();
        boolean cpuLoadSeen;
        /** Each platform thread's allocated bytes so far (jdk.ThreadAllocationStatistics) at the last
         * reading before the window and at the first after it: {before, after} as {epoch ms, bytes}. */
        final Map<Long, long[][]> allocated = new HashMap<>();

        Window(long startMs, long endMs) {
            start = Instant.ofEpochMilli(startMs);
            end = Instant.ofEpochMilli(endMs);
        }

        /** A reading of a thread's allocated bytes near the window: kept when it brackets the window
         * more tightly than the ones seen so far. */
        void allocation(RecordedEvent e) {
            long t = e.getStartTime().toEpochMilli(), bytes = e.getLong("allocated");
            RecordedThread thread = e.getThread("thread");
            if (thread == null || t < start.toEpochMilli() - BRACKET_MS || t > end.toEpochMilli() + BRACKET_MS) {
                return;
            }
            long[][] r = allocated.computeIfAbsent(thread.getJavaThreadId(), k -> new long[][] {null, null});
            if (t <= start.toEpochMilli() && (r[0] == null || t > r[0][0])) {
                r[0] = new long[] {t, bytes};
            } else if (t >= end.toEpochMilli() && (r[1] == null || t < r[1][0])) {
                r[1] = new long[] {t, bytes};
            }
        }

        /** MB allocated per second over the window: each thread's bytes between its readings around the
         * window, over the time between them; a thread born inside the window counts from zero. */
        Double allocMbPerSecond() {
            long from = Long.MAX_VALUE, to = Long.MIN_VALUE, bytes = 0;
            for (long[][] r : allocated.values()) {
                if (r[0] != null) from = Math.min(from, r[0][0]);
                if (r[1] != null) to = Math.max(to, r[1][0]);
            }
            if (from == Long.MAX_VALUE || to == Long.MIN_VALUE) {
                return null;   // no reading on both sides of the window
            }
            for (long[][] r : allocated.values()) {
                if (r[1] != null) {
                    bytes += r[1][1] - (r[0] == null ? 0 : r[0][1]);
                }
            }
            return bytes / 1048576.0 / ((to - from) / 1000.0);
        }

        boolean holds(RecordedEvent e) {
            Instant t = e.getStartTime();
            return !t.isBefore(start) && t.isBefore(end);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: java JfrEvidence RECORDING START_MS:END_MS [START_MS:END_MS ...]");
            System.exit(2);
        }
        List<Window> windows = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String[] edges = args[i].split(":");
            windows.add(new Window(Long.parseLong(edges[0]), Long.parseLong(edges[1])));
        }
        try (RecordingFile file = new RecordingFile(Path.of(args[0]))) {
            while (file.hasMoreEvents()) {
                RecordedEvent e = file.readEvent();
                boolean allocation = e.getEventType().getName().equals("jdk.ThreadAllocationStatistics");
                for (Window w : windows) {
                    if (allocation) {
                        w.allocation(e);
                    } else if (w.holds(e)) {
                        add(w, e);
                    }
                }
            }
        }
        for (Window w : windows) {
            System.out.println(json(summary(w)));
        }
    }

    static double ms(RecordedEvent e) {
        return e.getDuration().toNanos() / 1e6;
    }

    static void add(Window w, RecordedEvent e) {
        switch (e.getEventType().getName()) {
            case "jdk.ExecutionSample" -> {
                w.samples++;
                RecordedThread t = e.getThread("sampledThread");
                RecordedStackTrace stack = e.getStackTrace();
                if (t != null && t.isVirtual()) {
                    w.virtualThreads.add(t.getJavaThreadId());
                }
                if (stack != null && !stack.getFrames().isEmpty()) {
                    w.hot.merge(method(stack.getFrames().get(0)), 1L, Long::sum);
                }
                if (t != null && t.getJavaName() != null && EVENT_LOOP.matcher(t.getJavaName()).matches()) {
                    w.eventLoopSamples++;
                    if (stack != null && stack.getFrames().stream().anyMatch(f -> APP.matcher(type(f)).find())) {
                        w.eventLoopAppSamples++;
                    }
                }
            }
            case "jdk.VirtualThreadPinned" -> {
                w.pinnedCount++;
                w.pinnedMs += ms(e);
                w.pinnedStacks.merge(stack(e.getStackTrace()), ms(e), Double::sum);
            }
            case "jdk.ThreadPark" -> {
                if (!idle(e.getStackTrace())) {
                    w.parkedMs += ms(e);
                }
            }
            case "jdk.JavaMonitorEnter" -> w.monitorMs += ms(e);
            case "jdk.ThreadSleep" -> w.sleepMs += ms(e);
            case "jdk.SocketRead" -> w.socketReadMs += ms(e);
            case "jdk.GarbageCollection" -> {
                w.gcCount++;
                w.gcPauseMs += e.getDuration("sumOfPauses").toNanos() / 1e6;
            }
            case "jdk.SafepointBegin" -> w.safepointMs += ms(e);
            case "jdk.ThreadCPULoad" -> {
                RecordedThread t = e.getThread();
                if (t != null) {
                    double[] acc = w.threadCpu.computeIfAbsent(t.getJavaName() + "#" + t.getJavaThreadId(), k -> new double[2]);
                    acc[0] += e.getFloat("user") + e.getFloat("system");
                    acc[1]++;
                }
                w.cpuLoadSeen = true;
            }
            default -> { }
        }
    }

    /** A pool's worker waiting for its next task (ThreadPoolExecutor.getTask: Tomcat's and the JDK's;
     * ForkJoinPool.awaitWork: carriers and parallel pools) is idle, not held up: 200 idle Tomcat
     * workers would otherwise read as 200 threads parked. */
    static boolean idle(RecordedStackTrace stack) {
        if (stack == null) {
            return false;
        }
        for (RecordedFrame f : stack.getFrames()) {
            if (f.getMethod() != null && IDLE.matcher(f.getMethod().getName()).matches()
                    && type(f).contains("Pool")) {
                return true;
            }
        }
        return false;
    }

    static String type(RecordedFrame f) {
        return f.getMethod() == null ? "" : f.getMethod().getType().getName();
    }

    static String method(RecordedFrame f) {
        return f.getMethod() == null ? "?" : type(f) + "." + f.getMethod().getName();
    }

    /** The top frames of a stack from the call that blocked: the JDK's own parking frames above it
     * (VirtualThread, jdk.internal) are the same in every pinning and say nothing. */
    static String stack(RecordedStackTrace stack) {
        if (stack == null) {
            return "";
        }
        List<String> frames = new ArrayList<>();
        for (RecordedFrame f : stack.getFrames()) {
            if (frames.isEmpty() && PARKING.matcher(type(f)).find()) {
                continue;
            }
            if (frames.size() == STACK_FRAMES) {
                break;
            }
            frames.add(method(f));
        }
        return String.join(" <- ", frames);
    }

    static Map<String, Object> summary(Window w) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jfr_samples", w.samples);
        List<Map.Entry<String, Long>> hot = new ArrayList<>(w.hot.entrySet());
        hot.sort(Map.Entry.<String, Long>comparingByValue().reversed());
        List<String> top = new ArrayList<>();
        for (Map.Entry<String, Long> m : hot.subList(0, Math.min(HOT_METHODS, hot.size()))) {
            top.add(String.format(Locale.ROOT, "%s %.0f%%", m.getKey(), 100.0 * m.getValue() / w.samples));
        }
        out.put("jfr_hot_methods", String.join("; ", top));
        out.put("jfr_pinned_count", w.pinnedCount);
        out.put("jfr_pinned_ms", w.pinnedMs);
        out.put("jfr_pinned_top_stack", w.pinnedStacks.entrySet().stream()
                .max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse(null));
        long busy = 0, carriers = 0;
        for (Map.Entry<String, double[]> t : w.threadCpu.entrySet()) {
            if (t.getValue()[0] / t.getValue()[1] >= BUSY_CPU) {
                busy++;
                if (CARRIER.matcher(t.getKey().substring(0, t.getKey().lastIndexOf('#'))).matches()) {
                    carriers++;
                }
            }
        }
        out.put("jfr_platform_threads_busy", w.cpuLoadSeen ? busy : null);
        out.put("jfr_carrier_threads_busy", w.cpuLoadSeen ? carriers : null);
        out.put("jfr_virtual_threads_sampled", (long) w.virtualThreads.size());
        out.put("jfr_parked_ms", w.parkedMs);
        out.put("jfr_monitor_blocked_ms", w.monitorMs);
        out.put("jfr_sleep_ms", w.sleepMs);
        out.put("jfr_socket_read_ms", w.socketReadMs);
        out.put("jfr_gc_pause_ms", w.gcPauseMs);
        out.put("jfr_gc_count", w.gcCount);
        out.put("jfr_safepoint_ms", w.safepointMs);
        // Not the sum of jdk.ObjectAllocationSample weights: a thread's first sample in a recording weighs
        // everything it allocated since it started (read 13 GB/s for Spring MVC on virtual threads whose
        // GCs, 7 in 1.7 s, allowed under 1 GB/s)
        out.put("jfr_alloc_mb_per_s", w.allocMbPerSecond());
        out.put("jfr_event_loop_samples", w.eventLoopSamples);
        out.put("jfr_event_loop_app_share", w.eventLoopSamples == 0 ? null : (double) w.eventLoopAppSamples / w.eventLoopSamples);
        return out;
    }

    static String json(Map<String, Object> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (b.length() > 1) {
                b.append(", ");
            }
            b.append('"').append(e.getKey()).append("\": ").append(value(e.getValue()));
        }
        return b.append('}').toString();
    }

    static String value(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Double d) {
            return Double.isFinite(d) ? String.format(Locale.ROOT, "%.3f", d) : "null";
        }
        if (v instanceof Number) {
            return v.toString();
        }
        StringBuilder s = new StringBuilder("\"");
        for (char c : v.toString().toCharArray()) {
            switch (c) {
                case '"' -> s.append("\\\"");
                case '\\' -> s.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
                }
            }
        }
        return s.append('"').toString();
    }
}
